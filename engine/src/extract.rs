//! Extraction: the bytes of a file or a fetched page → title, canonical URL,
//! and sections of text under their heading paths, ready for chunking.
//!
//! PDF text comes out page by page (each page a section headed "Page N").
//!
//! HTML keeps the page's main content: `<main>`, else `<article>`, else
//! `[role=main]`, else `<body>`, with navigation, headers, footers, asides,
//! scripts, styles and forms dropped wherever they sit.

use scraper::{ElementRef, Html, Node, Selector};

use crate::chunk::{markdown_sections, Section};

/// Formats Lore can extract.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Markdown,
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
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extracted {
    pub title: Option<String>,
    /// `<link rel="canonical">`, for pages.
    pub canonical_url: Option<String>,
    pub sections: Vec<Section>,
}

/// Decides the format from the file name, then the declared content type,
/// then the bytes themselves.
pub fn detect(file_name: &str, content_type: Option<&str>, bytes: &[u8]) -> Result<Format, ExtractError> {
    let extension = file_name.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase());
    match extension.as_deref() {
        Some("md" | "markdown" | "mdx") => return Ok(Format::Markdown),
        Some("txt" | "text") => return Ok(Format::PlainText),
        Some("html" | "htm" | "xhtml") => return Ok(Format::Html),
        Some("pdf") => return Ok(Format::Pdf),
        _ => {}
    }
    let mime = content_type.map(|ct| ct.split(';').next().unwrap_or_default().trim().to_ascii_lowercase());
    match mime.as_deref() {
        Some("text/markdown" | "text/x-markdown") => return Ok(Format::Markdown),
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
            "{what}; Lore reads Markdown, plain text, HTML and PDF"
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

/// Extracts `bytes` as `format`. `name` titles a document that has no title
/// of its own (the file name, or the URL).
pub fn extract(format: Format, bytes: &[u8], name: &str) -> Result<Extracted, ExtractError> {
    if format == Format::Pdf {
        return finish(extract_pdf(bytes)?, name);
    }
    let text =
        std::str::from_utf8(bytes).map_err(|_| ExtractError::Corrupt("it is not valid UTF-8 text".into()))?;
    let extracted = match format {
        Format::Markdown => {
            let sections = markdown_sections(text);
            let title = text.lines().find_map(|line| line.strip_prefix("# ")).map(|t| t.trim().to_owned());
            Extracted { title, canonical_url: None, sections }
        }
        Format::PlainText => Extracted {
            title: None,
            canonical_url: None,
            sections: vec![Section { heading: None, text: text.trim().to_owned() }],
        },
        Format::Html => extract_html(text),
        Format::Pdf => Extracted { title: None, canonical_url: None, sections: Vec::new() },
    };
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

/// Text of each page. The PDF parser can panic on malformed input; that is
/// caught and reported as a corrupt file, like any other parse failure.
fn extract_pdf(bytes: &[u8]) -> Result<Extracted, ExtractError> {
    if !bytes.starts_with(b"%PDF-") {
        return Err(ExtractError::Corrupt("it does not start like a PDF file".into()));
    }
    let parsed = std::panic::catch_unwind(|| pdf_extract::extract_text_from_mem_by_pages(bytes))
        .map_err(|_| ExtractError::Corrupt("the PDF structure is damaged".into()))?
        .map_err(|err| ExtractError::Corrupt(format!("the PDF cannot be parsed ({err})")))?;
    let sections = parsed
        .iter()
        .enumerate()
        .map(|(page, text)| Section {
            heading: Some(format!("Page {}", page + 1)),
            text: text.lines().map(collapse).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("\n"),
        })
        .collect();
    Ok(Extracted { title: None, canonical_url: None, sections })
}

/// Elements whose whole subtree is boilerplate, never content.
const DROPPED: [&str; 12] = [
    "nav", "header", "footer", "aside", "script", "style", "noscript", "form", "template", "svg", "iframe",
    "button",
];

/// Elements that end a line of text.
const BLOCKS: [&str; 22] = [
    "p",
    "div",
    "section",
    "article",
    "main",
    "li",
    "ul",
    "ol",
    "pre",
    "blockquote",
    "table",
    "tr",
    "td",
    "th",
    "dl",
    "dt",
    "dd",
    "br",
    "hr",
    "figure",
    "figcaption",
    "details",
];

fn selector(css: &str) -> Option<Selector> {
    Selector::parse(css).ok()
}

fn extract_html(html: &str) -> Extracted {
    let document = Html::parse_document(html);
    let first_text = |css: &str| -> Option<String> {
        let found = document.select(&selector(css)?).next()?;
        Some(collapse(&found.text().collect::<String>())).filter(|t| !t.is_empty())
    };
    let title = first_text("title").or_else(|| first_text("h1"));
    let canonical_url = selector("link[rel~=canonical]")
        .and_then(|s| document.select(&s).next())
        .and_then(|link| link.value().attr("href"))
        .map(str::to_owned);

    let root = ["main", "article", "[role=main]", "body"]
        .iter()
        .filter_map(|css| selector(css))
        .find_map(|s| document.select(&s).next());
    let mut walker = Walker::default();
    if let Some(root) = root {
        walker.walk(root);
    }
    walker.flush();
    Extracted { title, canonical_url, sections: walker.sections }
}

#[derive(Default)]
struct Walker {
    path: Vec<(usize, String)>,
    lines: Vec<String>,
    line: String,
    sections: Vec<Section>,
}

impl Walker {
    fn walk(&mut self, element: ElementRef<'_>) {
        let name = element.value().name();
        let role = element.value().attr("role").unwrap_or_default();
        if DROPPED.contains(&name) || matches!(role, "navigation" | "banner" | "contentinfo") {
            return;
        }
        if let Some(level) = heading_level(name) {
            self.flush();
            let title = collapse(&element.text().collect::<String>());
            if !title.is_empty() {
                self.path.retain(|(outer, _)| *outer < level);
                self.path.push((level, title));
            }
            return;
        }
        let preformatted = name == "pre";
        for child in element.children() {
            match child.value() {
                Node::Text(text) if preformatted => self.line.push_str(text),
                Node::Text(text) => {
                    let piece = collapse(text);
                    if !piece.is_empty() {
                        if !self.line.is_empty()
                            && !self.line.ends_with(' ')
                            && text.starts_with(char::is_whitespace)
                        {
                            self.line.push(' ');
                        }
                        self.line.push_str(&piece);
                        if text.ends_with(char::is_whitespace) {
                            self.line.push(' ');
                        }
                    }
                }
                Node::Element(_) => {
                    if let Some(child) = ElementRef::wrap(child) {
                        self.walk(child);
                    }
                }
                _ => {}
            }
        }
        if BLOCKS.contains(&name) {
            self.end_line();
        }
    }

    fn end_line(&mut self) {
        let line = self.line.trim_end().to_owned();
        if !line.trim().is_empty() {
            self.lines.push(line);
        }
        self.line.clear();
    }

    fn flush(&mut self) {
        self.end_line();
        if !self.lines.is_empty() {
            let heading = (!self.path.is_empty())
                .then(|| self.path.iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>().join(" › "));
            self.sections.push(Section { heading, text: self.lines.join("\n") });
            self.lines.clear();
        }
    }
}

fn heading_level(name: &str) -> Option<usize> {
    match name {
        "h1" => Some(1),
        "h2" => Some(2),
        "h3" => Some(3),
        "h4" => Some(4),
        "h5" => Some(5),
        "h6" => Some(6),
        _ => None,
    }
}

/// Collapses runs of whitespace to single spaces and trims.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = r#"<!doctype html>
<html><head><title>Install Lore · Docs</title>
<link rel="canonical" href="https://docs.example.test/install">
<style>.x { color: red }</style><script>var tracking = 1;</script></head>
<body>
<header><a href="/">Example Docs</a><nav><a href="/a">All pages</a> <a href="/b">Blog</a></nav></header>
<aside class="sidebar"><ul><li>Sidebar link</li></ul></aside>
<main>
  <h1>Install Lore</h1>
  <p>Lore runs on <strong>Linux</strong> and <em>macOS</em>.</p>
  <h2>Requirements</h2>
  <ul><li>2 cores</li><li>4 GB of memory</li></ul>
  <h2>Steps</h2>
  <pre>scripts/run
lore serve</pre>
  <div role="navigation">Previous | Next</div>
  <form><button>Was this page helpful?</button></form>
</main>
<footer>© Example Inc. Privacy · Terms</footer>
</body></html>"#;

    #[test]
    fn html_keeps_main_content_title_and_headings() {
        let extracted = extract(Format::Html, PAGE.as_bytes(), "install.html").unwrap();
        assert_eq!(extracted.title.as_deref(), Some("Install Lore · Docs"));
        assert_eq!(extracted.canonical_url.as_deref(), Some("https://docs.example.test/install"));
        let sections: Vec<(Option<&str>, &str)> =
            extracted.sections.iter().map(|s| (s.heading.as_deref(), s.text.as_str())).collect();
        assert_eq!(
            sections,
            [
                (Some("Install Lore"), "Lore runs on Linux and macOS."),
                (Some("Install Lore › Requirements"), "2 cores\n4 GB of memory"),
                (Some("Install Lore › Steps"), "scripts/run\nlore serve"),
            ]
        );
        let all: String = extracted.sections.iter().map(|s| s.text.clone()).collect();
        for boilerplate in ["All pages", "Sidebar", "Previous", "helpful", "Privacy", "tracking", "color"] {
            assert!(!all.contains(boilerplate), "{boilerplate} leaked into {all:?}");
        }
    }

    #[test]
    fn a_page_without_main_uses_the_body_minus_boilerplate() {
        let html =
            "<html><body><nav>Menu</nav><h1>Title</h1><p>Body text.</p><footer>Foot</footer></body></html>";
        let extracted = extract(Format::Html, html.as_bytes(), "page").unwrap();
        assert_eq!(extracted.title.as_deref(), Some("Title"));
        assert_eq!(
            extracted.sections,
            vec![Section { heading: Some("Title".into()), text: "Body text.".into() }]
        );
    }

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
}
