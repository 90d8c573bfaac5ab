//! Chunking: documents → sections (each with its heading path) → chunks that
//! fit the embedding model's window, measured in the model's own tokens, with
//! overlap between neighbours so that a sentence cut at a boundary is still
//! whole in one of them.

use serde::{Deserialize, Serialize};
use text_splitter::{ChunkConfig, ChunkSizer, TextSplitter};

use crate::embed::Embedder;

/// Sections and the Markdown splitter live with the other parsers of
/// untrusted input, in `lore-extract`.
pub use lore_extract::{markdown_sections, Section};

/// Chunk size and overlap, in tokens of the embedding model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkingParams {
    pub max_tokens: usize,
    pub overlap_tokens: usize,
}

impl Default for ChunkingParams {
    /// Fits all-MiniLM-L6-v2's 256-token window with room for a heading and
    /// the two special tokens.
    fn default() -> Self {
        Self { max_tokens: 200, overlap_tokens: 40 }
    }
}

impl ChunkingParams {
    pub fn validate(&self) -> Result<(), String> {
        if self.max_tokens < 16 {
            return Err("chunk size must be at least 16 tokens".into());
        }
        if self.overlap_tokens >= self.max_tokens {
            return Err("chunk overlap must be smaller than the chunk size".into());
        }
        Ok(())
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    pub heading: Option<String>,
    /// The chunk's own text.
    pub text: String,
    /// What is embedded: the heading, a blank line, the text.
    pub embed_text: String,
    /// 0-based position within the document.
    pub position: usize,
}

/// Measures text in the embedding model's tokens.
struct ModelTokens<'a>(&'a dyn Embedder);

impl ChunkSizer for ModelTokens<'_> {
    fn size(&self, chunk: &str) -> usize {
        self.0.count_tokens(chunk)
    }
}

/// Chunks sections so that each chunk's `embed_text` fits the model's window.
pub fn chunk_sections(sections: &[Section], params: ChunkingParams, embedder: &dyn Embedder) -> Vec<Chunk> {
    // [CLS] and [SEP] take two places in the window.
    let window = embedder.max_tokens().saturating_sub(2);
    let mut chunks = Vec::new();
    for section in sections {
        let heading_tokens = section.heading.as_deref().map_or(0, |h| embedder.count_tokens(h) + 1);
        let capacity = params.max_tokens.min(window.saturating_sub(heading_tokens)).max(8);
        let overlap = params.overlap_tokens.min(capacity / 2);
        let config = match ChunkConfig::new(capacity).with_sizer(ModelTokens(embedder)).with_overlap(overlap)
        {
            Ok(config) => config,
            // Unreachable: overlap is at most half the capacity.
            Err(_) => ChunkConfig::new(capacity).with_sizer(ModelTokens(embedder)),
        };
        for text in TextSplitter::new(config).chunks(&section.text) {
            let embed_text = match &section.heading {
                Some(heading) => format!("{heading}\n\n{text}"),
                None => text.to_owned(),
            };
            chunks.push(Chunk {
                heading: section.heading.clone(),
                text: text.to_owned(),
                embed_text,
                position: chunks.len(),
            });
        }
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunking_parameters_are_validated() {
        assert!(ChunkingParams::default().validate().is_ok());
        assert!(ChunkingParams { max_tokens: 100, overlap_tokens: 100 }.validate().is_err());
        assert!(ChunkingParams { max_tokens: 4, overlap_tokens: 0 }.validate().is_err());
    }
}
