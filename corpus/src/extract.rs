//! Extraction lives in its own crate, `lore-extract`, with the other parsers
//! of untrusted input (sitemaps, a page's links), so that its fuzz targets
//! build it alone. This module keeps the engine's paths to it.

pub use lore_extract::{
    detect, extract, extract_within, heading_anchor, ExtractError, Extracted, Format, Limits, Section,
};
