//! Sitemaps and sitemap indexes, as a crawled site serves them.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = lore_extract::parse_sitemap(data);
});
