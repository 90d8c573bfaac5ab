//! Markdown and plain text, and format detection on any bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lore_extract::{detect, extract, Format};

fuzz_target!(|data: &[u8]| {
    let _ = detect("upload", None, data);
    let _ = extract(Format::Markdown, data, "file.md");
    let _ = extract(Format::PlainText, data, "file.txt");
    let _ = extract(Format::Mdx, data, "file.mdx");
    let _ = extract(Format::ReStructuredText, data, "file.rst");
    let _ = extract(Format::AsciiDoc, data, "file.adoc");
});
