//! HTML as uploaded or crawled: extraction (detected as HTML whatever the
//! bytes) and the crawler's link finder.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lore_extract::{extract, links, Format, Limits};

fuzz_target!(|data: &[u8]| {
    let _ = extract(Format::Html, data, "page.html");
    let _ = links(data, &Limits::default());
});
