//! PDF uploads and crawled PDFs.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lore_extract::{extract, Format};

fuzz_target!(
    init: {
        // The PDF library panics on some malformed files; extraction catches
        // that and reports a corrupt file. libfuzzer-sys would turn every
        // panic, caught or not, into an abort: put the quiet default back,
        // so only what escapes extraction counts as a crash.
        std::panic::set_hook(Box::new(|_| {}));
    },
    |data: &[u8]| {
        let _ = extract(Format::Pdf, data, "file.pdf");
    }
);
