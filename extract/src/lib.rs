//! Extraction: the bytes of a file or a fetched page → title, canonical URL,
//! and sections of text under their heading paths, ready for chunking; and
//! the other parsers of what a crawled site sends (sitemaps, a page's links).
//!
//! Everything here reads untrusted input, so every parser is bounded: no
//! recursion whose depth the input chooses, a cap on nesting and on the
//! elements a page may hold, a cap on the bytes a PDF may decompress to, and
//! a time budget checked as the work goes. A document over a limit is an
//! [`ExtractError::OverLimit`] naming the limit, never a crash or a hang.
//! This crate is small on purpose: the fuzz targets in `fuzz/` build it
//! without the rest of Lore.
//!
//! PDF text comes out page by page (each page a section headed "Page N").
//!
//! HTML keeps the page's main content: `<main>`, else `<article>`, else
//! `[role=main]`, else `<body>`, with navigation, headers, footers, asides,
//! scripts, styles and forms dropped wherever they sit.

use std::time::{Duration, Instant};

mod html;
mod markdown;
mod markup;
mod pdf;
mod sitemap;

pub use html::links;
pub use markdown::markdown_sections;
pub use markup::heading_anchor;
pub use sitemap::{parse_sitemap, Sitemap};

/// Formats Lore can extract.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Markdown,
    /// Markdown with JSX components and `import`/`export` lines.
    Mdx,
    ReStructuredText,
    AsciiDoc,
    PlainText,
    Html,
    Pdf,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ExtractError {
    /// Not a format Lore reads (the message names what it got).
    #[error("unsupported file type: {0}")]
    Unsupported(String),
    /// The right type, but the content cannot be read.
    #[error("the file cannot be read: {0}")]
    Corrupt(String),
    /// Readable, but nothing to index.
    #[error("the file has no text to index")]
    Empty,
    /// Past one of [`Limits`]: the message names which, and by how much.
    #[error("the document is over a limit: {0}")]
    OverLimit(String),
}

/// A stretch of a document under one heading.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    /// The heading path, outermost first, joined with " › " (`None` before the first heading).
    pub heading: Option<String>,
    pub text: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extracted {
    pub title: Option<String>,
    /// `<link rel="canonical">`, for pages.
    pub canonical_url: Option<String>,
    pub sections: Vec<Section>,
}

/// How far one document may take the parsers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Elements nested inside each other. Browsers stop nesting at 512
    /// (Blink's parser does); a page deeper than that is built to hurt.
    pub max_depth: usize,
    /// Elements in one page. A large documentation page has tens of
    /// thousands; each costs a few hundred bytes once parsed.
    pub max_elements: usize,
    /// Bytes a PDF's streams may decompress to, per byte of the file...
    pub inflation_ratio: u64,
    /// ...but never less than this (small files legitimately hold text that
    /// compresses very well)...
    pub min_inflated_bytes: u64,
    /// ...and never more than this, whatever the file's size.
    pub max_inflated_bytes: u64,
    /// Wall-clock time one document may take.
    pub time_budget: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_depth: 512,
            max_elements: 400_000,
            inflation_ratio: 100,
            min_inflated_bytes: 32 * 1024 * 1024,
            max_inflated_bytes: 128 * 1024 * 1024,
            time_budget: Duration::from_secs(20),
        }
    }
}

impl Limits {
    /// The most a PDF of `input_len` bytes may decompress to.
    pub fn inflated_cap(&self, input_len: usize) -> u64 {
        (input_len as u64)
            .saturating_mul(self.inflation_ratio)
            .clamp(self.min_inflated_bytes, self.max_inflated_bytes.max(self.min_inflated_bytes))
    }
}

/// The time budget of one document, checked between pieces of work.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Deadline {
    started: Instant,
    budget: Duration,
}

impl Deadline {
    pub(crate) fn start(budget: Duration) -> Self {
        Self { started: Instant::now(), budget }
    }

    pub(crate) fn check(&self) -> Result<(), ExtractError> {
        if self.started.elapsed() > self.budget {
            return Err(ExtractError::OverLimit(format!(
                "reading it took longer than {} s",
                self.budget.as_secs_f32()
            )));
        }
        Ok(())
    }
}

/// Decides the format from the file name, then the declared content type,
/// then the bytes themselves.
pub fn detect(file_name: &str, content_type: Option<&str>, bytes: &[u8]) -> Result<Format, ExtractError> {
    let extension = file_name.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase());
    match extension.as_deref() {
        Some("md" | "markdown") => return Ok(Format::Markdown),
        Some("mdx") => return Ok(Format::Mdx),
        Some("rst" | "rest") => return Ok(Format::ReStructuredText),
        Some("adoc" | "asciidoc" | "asc") => return Ok(Format::AsciiDoc),
        Some("txt" | "text") => return Ok(Format::PlainText),
        Some("html" | "htm" | "xhtml") => return Ok(Format::Html),
        Some("pdf") => return Ok(Format::Pdf),
        _ => {}
    }
    let mime = content_type.map(|ct| ct.split(';').next().unwrap_or_default().trim().to_ascii_lowercase());
    match mime.as_deref() {
        Some("text/markdown" | "text/x-markdown") => return Ok(Format::Markdown),
        Some("text/x-rst") => return Ok(Format::ReStructuredText),
        Some("text/asciidoc") => return Ok(Format::AsciiDoc),
        Some("text/html" | "application/xhtml+xml") => return Ok(Format::Html),
        Some("text/plain") => return Ok(Format::PlainText),
        Some("application/pdf") => return Ok(Format::Pdf),
        _ => {}
    }
    if bytes.starts_with(b"%PDF-") {
        return Ok(Format::Pdf);
    }
    if looks_binary(bytes) {
        let what =
            extension.map(|ext| format!(".{ext} file")).or(mime).unwrap_or_else(|| "binary data".into());
        return Err(ExtractError::Unsupported(format!(
            "{what}; Lore reads Markdown, MDX, reStructuredText, AsciiDoc, plain text, HTML and PDF"
        )));
    }
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).to_ascii_lowercase();
    if head.contains("<html") || head.contains("<!doctype html") {
        Ok(Format::Html)
    } else {
        Ok(Format::PlainText)
    }
}

fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(1024)].contains(&0)
}

/// Extracts `bytes` as `format` within the default [`Limits`]. `name` titles
/// a document that has no title of its own (the file name, or the URL).
pub fn extract(format: Format, bytes: &[u8], name: &str) -> Result<Extracted, ExtractError> {
    extract_within(format, bytes, name, &Limits::default())
}

/// [`extract`] within `limits`.
pub fn extract_within(
    format: Format,
    bytes: &[u8],
    name: &str,
    limits: &Limits,
) -> Result<Extracted, ExtractError> {
    let deadline = Deadline::start(limits.time_budget);
    if format == Format::Pdf {
        return finish(pdf::extract(bytes, limits, deadline)?, name);
    }
    let text =
        std::str::from_utf8(bytes).map_err(|_| ExtractError::Corrupt("it is not valid UTF-8 text".into()))?;
    let extracted = match format {
        Format::Markdown => {
            let (title, sections) = markup::markdown_document(text);
            Extracted { title, canonical_url: None, sections }
        }
        Format::Mdx => {
            let (front_title, body) = markup::front_matter(text);
            let (title, sections) = markup::markdown_document(&markup::mdx_to_markdown(body));
            Extracted { title: front_title.or(title), canonical_url: None, sections }
        }
        Format::ReStructuredText => {
            let (title, sections) = markup::rst_sections(text);
            Extracted { title, canonical_url: None, sections }
        }
        Format::AsciiDoc => {
            let (front_title, body) = markup::front_matter(text);
            let (title, sections) = markup::asciidoc_sections(body);
            Extracted { title: front_title.or(title), canonical_url: None, sections }
        }
        Format::PlainText => Extracted {
            title: None,
            canonical_url: None,
            sections: vec![Section { heading: None, text: text.trim().to_owned() }],
        },
        Format::Html => html::extract(text, limits, deadline)?,
        Format::Pdf => Extracted { title: None, canonical_url: None, sections: Vec::new() },
    };
    deadline.check()?;
    finish(extracted, name)
}

/// Drops empty sections, refuses a document with none, titles an untitled one.
fn finish(extracted: Extracted, name: &str) -> Result<Extracted, ExtractError> {
    let sections: Vec<Section> =
        extracted.sections.into_iter().filter(|s| !s.text.trim().is_empty()).collect();
    if sections.is_empty() {
        return Err(ExtractError::Empty);
    }
    let title = extracted.title.filter(|t| !t.is_empty()).or_else(|| Some(name.to_owned()));
    Ok(Extracted { title, canonical_url: extracted.canonical_url, sections })
}

/// Collapses runs of whitespace to single spaces and trims.
pub(crate) fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_and_text_keep_their_titles() {
        let md = extract(Format::Markdown, b"# Guide\n\nHello.\n", "guide.md").unwrap();
        assert_eq!(md.title.as_deref(), Some("Guide"));
        let text = extract(Format::PlainText, b"Just text.\n", "notes.txt").unwrap();
        assert_eq!(text.title.as_deref(), Some("notes.txt"));
        assert_eq!(text.sections[0].text, "Just text.");
    }

    #[test]
    fn types_are_detected_and_bad_input_is_named() {
        assert_eq!(detect("a.md", None, b"x"), Ok(Format::Markdown));
        assert_eq!(detect("a.HTML", None, b"x"), Ok(Format::Html));
        assert_eq!(detect("upload", Some("text/html; charset=utf-8"), b"x"), Ok(Format::Html));
        assert_eq!(detect("upload", None, b"<!DOCTYPE html><html></html>"), Ok(Format::Html));
        assert_eq!(detect("notes", None, b"plain words"), Ok(Format::PlainText));
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        assert!(
            matches!(detect("logo.png", None, png), Err(ExtractError::Unsupported(what)) if what.contains(".png"))
        );
        assert_eq!(
            extract(Format::PlainText, b"\xff\xfe\xfa", "x.txt"),
            Err(ExtractError::Corrupt("it is not valid UTF-8 text".into()))
        );
        assert_eq!(extract(Format::Markdown, b"   \n\n", "empty.md"), Err(ExtractError::Empty));
    }

    #[test]
    fn the_inflation_cap_is_proportional_within_its_floor_and_ceiling() {
        let limits = Limits::default();
        assert_eq!(limits.inflated_cap(1_000), limits.min_inflated_bytes);
        assert_eq!(limits.inflated_cap(1_000_000), 100_000_000);
        assert_eq!(limits.inflated_cap(50 * 1024 * 1024), limits.max_inflated_bytes);
    }

    #[test]
    fn a_spent_time_budget_is_an_over_limit_error() {
        let limits = Limits { time_budget: Duration::ZERO, ..Limits::default() };
        let html = "<html><body><p>words</p></body></html>";
        std::thread::sleep(Duration::from_millis(2));
        assert!(matches!(
            extract_within(Format::Html, html.as_bytes(), "p", &limits),
            Err(ExtractError::OverLimit(why)) if why.contains("longer than")
        ));
    }
}
