//! The hostile inputs that once took Lore down, and a few of their cousins,
//! each run through the real parser in a process of its own, with the
//! figures printed: how long it took, what came of it, and the peak memory
//! above the process at rest. A death or a run past the time budget is a
//! failure (exit status 1). `--seeds DIR` writes the smaller ones as seeds
//! for the fuzz targets instead.
//!
//! Usage: `hostile [--json FILE] [--seeds DIR]` (see `scripts/harden`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use lore_extract::{extract, links, parse_sitemap, Format, Limits};

// The crawler's address classification: std only, so it is compiled here
// from the engine's own file rather than pulled in with the whole engine.
#[allow(dead_code)]
#[path = "../../corpus/src/ingest/address.rs"]
mod address;

/// Which parser an input is for.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Html,
    Pdf,
    Markdown,
    Sitemap,
    Robots,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Html => "html",
            Kind::Pdf => "pdf",
            Kind::Markdown => "text",
            Kind::Sitemap => "sitemap",
            Kind::Robots => "robots",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        [Kind::Html, Kind::Pdf, Kind::Markdown, Kind::Sitemap, Kind::Robots].into_iter().find(|k| k.name() == name)
    }
}

struct Input {
    name: &'static str,
    kind: Kind,
    bytes: Vec<u8>,
    /// Small enough to seed the fuzz target with.
    seed: bool,
}

fn nested(open: &str, close: &str, levels: usize) -> Vec<u8> {
    format!("{}word{}", open.repeat(levels), close.repeat(levels)).into_bytes()
}

fn zlib(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let _ = encoder.write_all(data);
    encoder.finish().unwrap_or_default()
}

/// A PDF holding one Flate stream of `mib` MiB of zeros, compressed `layers` times.
fn pdf_bomb(mib: usize, layers: usize) -> Vec<u8> {
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1024 * 1024];
    for _ in 0..mib {
        let _ = encoder.write_all(&zeros);
    }
    let mut stream = encoder.finish().unwrap_or_default();
    for _ in 1..layers {
        stream = zlib(&stream);
    }
    let mut pdf = format!("%PDF-1.4\n1 0 obj\n<< /Length {} /Filter /FlateDecode >>\nstream\n", stream.len())
        .into_bytes();
    pdf.extend_from_slice(&stream);
    pdf.extend_from_slice(b"\nendstream\nendobj\ntrailer\n<< >>\n%%EOF\n");
    pdf
}

/// `pdf` with a trailer naming an encryption dictionary.
fn encrypted(mut pdf: Vec<u8>) -> Vec<u8> {
    pdf.extend_from_slice(b"trailer\n<< /Root 1 0 R /Encrypt 2 0 R >>\n%%EOF\n");
    pdf
}

fn inputs() -> Vec<Input> {
    let input = |name, kind, bytes, seed| Input { name, kind, bytes, seed };
    vec![
        input("html: <div> x 5,000", Kind::Html, nested("<div>", "</div>", 5_000), true),
        input("html: <div> x 10,000 (killed the process)", Kind::Html, nested("<div>", "</div>", 10_000), true),
        input("html: <div> x 1,000,000 (pinned a core for minutes)", Kind::Html, nested("<div>", "</div>", 1_000_000), false),
        input("html: <b> x 100,000 unclosed", Kind::Html, "<b>".repeat(100_000).into_bytes(), false),
        input("html: <table><tr><td> x 20,000", Kind::Html, nested("<table><tr><td>", "</td></tr></table>", 20_000), false),
        input("html: <a><p> misnested x 50,000", Kind::Html, "<a><p>x</a>".repeat(50_000).into_bytes(), false),
        input("html: 500,000 <p> elements", Kind::Html, "<p>x</p>".repeat(500_000).into_bytes(), false),
        input("html: 10 MiB of text in one element", Kind::Html, format!("<p>{}</p>", "word ".repeat(2 * 1024 * 1024)).into_bytes(), false),
        input("pdf: 1 GiB of zeros in one stream (took 2.4 GB)", Kind::Pdf, pdf_bomb(1024, 1), false),
        input("pdf: 64 MiB of zeros in one stream", Kind::Pdf, pdf_bomb(64, 1), true),
        input("pdf: 1 GiB of zeros compressed twice", Kind::Pdf, pdf_bomb(1024, 2), true),
        input("pdf: 1 GiB of zeros, encrypted", Kind::Pdf, encrypted(pdf_bomb(1024, 1)), false),
        input("text: 10 MiB of headings", Kind::Markdown, "# h\n".repeat(2_500_000).into_bytes(), false),
        input("text: one 10 MiB line", Kind::Markdown, vec![b'#'; 10 * 1024 * 1024], false),
        input("sitemap: <url> x 1,000,000 nested", Kind::Sitemap, nested("<url>", "</url>", 1_000_000), false),
        input("sitemap: 200,000 unclosed <loc>", Kind::Sitemap, "<loc>".repeat(200_000).into_bytes(), true),
        input("robots: 500 KiB of wildcard rules", Kind::Robots, "User-agent: *\nDisallow: /*a*a*a*a*a*a*a*a*b\n".repeat(12_000).into_bytes(), false),
    ]
}

/// Runs one input here and prints `{"outcome", "ms", "peak_mib"}`.
fn run_one(kind: Kind, path: &Path) -> ExitCode {
    let Ok(bytes) = std::fs::read(path) else { return ExitCode::from(2) };
    let idle = status_kib("VmRSS:");
    let started = Instant::now();
    let outcome = match kind {
        Kind::Html => {
            let found = links(&bytes, &Limits::default()).len();
            describe(extract(Format::Html, &bytes, "page.html").map(|_| ()), Some(found))
        }
        Kind::Pdf => describe(extract(Format::Pdf, &bytes, "file.pdf").map(|_| ()), None),
        Kind::Markdown => describe(extract(Format::Markdown, &bytes, "file.md").map(|_| ()), None),
        Kind::Sitemap => match parse_sitemap(&bytes) {
            Ok(map) => format!("read: {} URLs", map.urls.len()),
            Err(err) => format!("refused: {}", err.chars().take(80).collect::<String>()),
        },
        Kind::Robots => match texting_robots::Robot::new("LoreBot", &bytes) {
            Ok(robot) => format!("read: /a/b allowed = {}", robot.allowed("https://x.test/a/b")),
            Err(err) => format!("refused: {err}"),
        },
    };
    let ms = started.elapsed().as_millis();
    let peak_mib = status_kib("VmHWM:").saturating_sub(idle) as f64 / 1024.0;
    let outcome = outcome.replace('"', "'");
    println!("{{\"outcome\": \"{outcome}\", \"ms\": {ms}, \"peak_mib\": {peak_mib:.1}}}");
    ExitCode::SUCCESS
}

fn describe(result: Result<(), lore_extract::ExtractError>, links: Option<usize>) -> String {
    let links = links.map(|n| format!(", {n} links")).unwrap_or_default();
    match result {
        Ok(()) => format!("read{links}"),
        Err(err) => format!("refused: {err}{links}"),
    }
}

/// A field of /proc/self/status, in KiB.
fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| line.strip_prefix(field).and_then(|v| v.trim().split(' ').next()?.parse().ok()))
        })
        .unwrap_or(0)
}

struct Figures {
    name: &'static str,
    outcome: String,
    ms: u128,
    peak_mib: f64,
    died: bool,
    hung: bool,
}

/// How long one input may take before it counts as a hang: the extraction
/// time budget, and a grace period for starting the process.
fn hang_after() -> Duration {
    Limits::default().time_budget + Duration::from_secs(5)
}

fn measure(dir: &Path, input: &Input, index: usize) -> Figures {
    let path = dir.join(format!("{index}.{}", input.kind.name()));
    let mut figures =
        Figures { name: input.name, outcome: String::new(), ms: 0, peak_mib: 0.0, died: false, hung: false };
    if std::fs::write(&path, &input.bytes).is_err() {
        figures.outcome = "could not write the input".into();
        figures.died = true;
        return figures;
    }
    let Ok(me) = std::env::current_exe() else { return figures };
    let child = Command::new(me)
        .args(["one", input.kind.name()])
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else {
        figures.outcome = "could not start".into();
        figures.died = true;
        return figures;
    };
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() > hang_after() => {
                let _ = child.kill();
                let _ = child.wait();
                figures.hung = true;
                figures.outcome = format!("still running after {} s: killed", hang_after().as_secs());
                return figures;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break,
        }
    }
    match child.wait_with_output() {
        Ok(output) if output.status.success() => {
            let line = String::from_utf8_lossy(&output.stdout).to_string();
            let field = |key: &str| -> Option<String> {
                let at = line.find(&format!("\"{key}\": "))? + key.len() + 4;
                let rest = &line[at..];
                let end = rest.find([',', '}']).unwrap_or(rest.len());
                Some(rest[..end].trim().trim_matches('"').to_owned())
            };
            figures.outcome = field("outcome").unwrap_or_default();
            figures.ms = field("ms").and_then(|v| v.parse().ok()).unwrap_or(0);
            figures.peak_mib = field("peak_mib").and_then(|v| v.parse().ok()).unwrap_or(0.0);
        }
        Ok(output) => {
            figures.died = true;
            figures.outcome = format!("the process died ({})", output.status);
        }
        Err(err) => {
            figures.died = true;
            figures.outcome = format!("the process was lost ({err})");
        }
    }
    figures
}

fn write_seeds(dir: &Path) -> ExitCode {
    for (index, input) in inputs().iter().enumerate().filter(|(_, i)| i.seed) {
        let target = dir.join(input.kind.name());
        if std::fs::create_dir_all(&target).is_err()
            || std::fs::write(target.join(format!("hostile-{index}")), &input.bytes).is_err()
        {
            eprintln!("could not write the seeds into {}", target.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["one", kind, path] => return Kind::parse(kind).map_or(ExitCode::from(2), |k| run_one(k, Path::new(path))),
        ["--seeds", dir] => return write_seeds(Path::new(dir)),
        _ => {}
    }
    let json = args.windows(2).find(|w| w[0] == "--json").map(|w| PathBuf::from(&w[1]));
    let Ok(dir) = std::env::temp_dir().join(format!("lore-hostile-{}", std::process::id())).canonicalize().or_else(|_| {
        let dir = std::env::temp_dir().join(format!("lore-hostile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map(|_| dir)
    }) else {
        eprintln!("no temporary directory");
        return ExitCode::FAILURE;
    };

    let mut all = Vec::new();
    println!("{:<55} {:>8} {:>10}  outcome", "input", "ms", "peak MiB");
    for (index, input) in inputs().iter().enumerate() {
        let figures = measure(&dir, input, index);
        println!("{:<55} {:>8} {:>10.1}  {}", figures.name, figures.ms, figures.peak_mib, figures.outcome);
        all.push(figures);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let deaths = all.iter().filter(|f| f.died).count();
    let hangs = all.iter().filter(|f| f.hung).count();
    let peak = all.iter().map(|f| f.peak_mib).fold(0.0, f64::max);
    let budget_mib = 256.0;
    let forms = address::special_purpose_forms();
    let accepted: Vec<String> =
        forms.iter().filter(|ip| address::is_public(**ip)).map(ToString::to_string).collect();

    println!(
        "\n{} inputs: {deaths} process deaths, {hangs} hangs past {} s, peak memory of one extraction {peak:.1} MiB above the idle process (limit {budget_mib})",
        all.len(),
        hang_after().as_secs()
    );
    if let Some(path) = json {
        let rows: Vec<String> = all
            .iter()
            .map(|f| {
                format!(
                    "    {{\"input\": \"{}\", \"ms\": {}, \"peak_mib\": {:.1}, \"died\": {}, \"hung\": {}, \"outcome\": \"{}\"}}",
                    f.name,
                    f.ms,
                    f.peak_mib,
                    f.died,
                    f.hung,
                    f.outcome.replace('"', "'")
                )
            })
            .collect();
        let record = format!(
            "{{\n  \"inputs\": [\n{}\n  ],\n  \"deaths\": {deaths},\n  \"hangs\": {hangs},\n  \"peak_mib\": {peak:.1},\n  \"address_forms\": {},\n  \"address_forms_accepted\": {}\n}}\n",
            rows.join(",\n"),
            forms.len(),
            accepted.len()
        );
        if std::fs::write(&path, record).is_err() {
            eprintln!("could not write {}", path.display());
        }
    }
    println!(
        "{} address forms of the IANA special-purpose registries (each block's first and last address, and the IPv4-mapped, -compatible, NAT64 and 6to4 forms of each IPv4 one): {} refused before any connection{}",
        forms.len(),
        forms.len() - accepted.len(),
        if accepted.is_empty() { String::new() } else { format!("; ACCEPTED: {}", accepted.join(", ")) }
    );
    if deaths > 0 || hangs > 0 || peak > budget_mib || !accepted.is_empty() {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
