//! The chunk index: every chunk's text, vector and provenance, searchable by
//! vector similarity and by full text. [`ChunkStore`] is the storage concern;
//! [`lance::LanceChunkStore`] keeps it in LanceDB (an embedded directory by
//! default, object storage when scaled out).

pub mod lance;

use async_trait::async_trait;

/// One chunk as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkRow {
    /// `{document_id}:{position}`: stable, so re-indexing a document replaces its rows.
    pub id: String,
    pub source_id: String,
    /// The view of a table source this chunk belongs to, when it holds only
    /// some of the source's attributes (the sources' `audience::View`, a
    /// floor up); none for a chunk every reader of its source reads.
    pub view: Option<String>,
    pub document_id: String,
    pub title: String,
    pub url: Option<String>,
    pub heading: Option<String>,
    pub position: u32,
    pub text: String,
    /// SHA-256 of what was embedded; the semantic cache checks citations against it.
    pub content_hash: String,
    pub vector: Vec<f32>,
}

impl ChunkRow {
    /// Its scope id: what a [`Scope`] lists and the store filters on.
    pub fn scope_id(&self) -> String {
        scope_id(&self.source_id, self.view.as_deref())
    }
}

/// Between a source's id and a view's in a scope id.
const VIEW_SEPARATOR: char = '#';

/// The scope id of the chunks of `source_id` in `view`: the source's id
/// alone, or `{source}#{view}` for a view of some of its attributes. Source
/// ids never hold the separator.
pub fn scope_id(source_id: &str, view: Option<&str>) -> String {
    match view {
        None => source_id.to_owned(),
        Some(view) => format!("{source_id}{VIEW_SEPARATOR}{view}"),
    }
}

/// A scope id read back: the source's id and the view, if any.
pub fn split_scope_id(scope_id: &str) -> (&str, Option<&str>) {
    match scope_id.split_once(VIEW_SEPARATOR) {
        Some((source, view)) => (source, Some(view)),
        None => (scope_id, None),
    }
}

/// Which chunks a search may return: those listed in `sources`, by scope id
/// (a source's id, or a view of a table source: [`scope_id`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scope {
    /// The scope ids searched (the enabled sources, each whole or as the
    /// view its reader reads).
    pub sources: Vec<String>,
    /// Whether `sources` is every source there is, as it usually is. The
    /// store then searches without a filter, which LanceDB plans and applies
    /// at a measurable cost per query (`lore bench answer`), and drops
    /// afterwards any stray chunk of a source no longer listed.
    pub every_source: bool,
}

impl Scope {
    /// Only `sources`, filtered in the query.
    pub fn only(sources: Vec<String>) -> Self {
        Self { sources, every_source: false }
    }

    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// Whether the chunks of `scope_id` are in scope.
    pub fn covers(&self, scope_id: &str) -> bool {
        self.sources.iter().any(|s| s == scope_id)
    }

    /// Whether any of `source_id`'s chunks are in scope, whole or as a view.
    pub fn reaches(&self, source_id: &str) -> bool {
        self.sources.iter().any(|s| split_scope_id(s).0 == source_id)
    }

    /// The same for two scopes exactly when they reach the same chunks:
    /// `*` for every source, otherwise a digest of the sorted source ids.
    /// What keeps an answer cached for one caller from serving another who
    /// may read less (an answer made over every source may serve whoever
    /// may read every source now: the sources it cites still exist).
    pub fn key(&self) -> String {
        if self.every_source {
            return "*".to_owned();
        }
        let mut ids: Vec<&str> = self.sources.iter().map(String::as_str).collect();
        ids.sort_unstable();
        crate::auth::sha256_hex(&ids.join("\n"))
    }
}

/// A chunk found by one search mode, with that mode's raw score.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    pub chunk: ChunkRow,
    /// Vector mode: cosine similarity. Text mode: BM25 score.
    pub score: f32,
}

/// What [`ChunkStore::optimize`] did beyond folding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Folded {
    /// The rows a vector index was first trained on, when this call built
    /// one (the store had just grown past its threshold).
    pub trained: Option<usize>,
}

/// A store's vector index as it stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VectorIndex {
    /// Rows stored.
    pub rows: usize,
    /// Rows the vector index covers (those it was trained on and those
    /// folded in since); `None` without an index, when searches scan every
    /// vector. Rows it does not cover are still searched, exactly.
    pub indexed: Option<usize>,
    /// The index is of a kind an earlier version built (IVF_PQ): searched
    /// as that kind asks, and trained anew as the current kind.
    pub outdated: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("the vector store failed: {0}")]
    Store(String),
    #[error("a vector has {got} dimensions, the index holds {expected}")]
    Dimensions { expected: usize, got: usize },
}

#[async_trait]
pub trait ChunkStore: Send + Sync {
    /// Replaces all chunks of `document_id` with `rows` in one commit: readers
    /// see the old chunks or the new ones, never a mix. Empty `rows` deletes.
    async fn replace_document(&self, document_id: &str, rows: Vec<ChunkRow>) -> Result<(), IndexError> {
        self.write_documents(&[document_id.to_owned()], rows).await
    }
    /// Writes the chunks of many documents in one commit: `rows` replace
    /// every chunk of the documents in `replaced` (one with no rows left
    /// loses its chunks); rows of any other document are added, so they
    /// must be of documents that have none stored (new ones). Readers see
    /// the whole write or none of it.
    async fn write_documents(&self, replaced: &[String], rows: Vec<ChunkRow>) -> Result<(), IndexError>;
    /// Deletes every chunk of a source, of its views too.
    async fn delete_source(&self, source_id: &str) -> Result<(), IndexError>;
    /// The `limit` nearest chunks to `vector` in `scope`.
    async fn vector_search(
        &self,
        vector: &[f32],
        scope: &Scope,
        limit: usize,
    ) -> Result<Vec<Hit>, IndexError>;
    /// The `limit` best full-text matches for `query` in `scope`.
    async fn text_search(&self, query: &str, scope: &Scope, limit: usize) -> Result<Vec<Hit>, IndexError>;
    /// How many chunks are stored (of `source_id` and its views, when given).
    async fn count(&self, source_id: Option<&str>) -> Result<usize, IndexError>;
    /// `chunk id → (scope id, content hash)` for those of `ids` still stored
    /// (the answer cache checks its citations against it).
    async fn content_hashes(
        &self,
        ids: &[String],
    ) -> Result<std::collections::HashMap<String, (String, String)>, IndexError>;
    /// Every stored chunk, a batch at a time, in no particular order
    /// (building a shadow index reads the active one this way).
    async fn scan(
        &self,
    ) -> Result<futures::stream::BoxStream<'static, Result<Vec<ChunkRow>, IndexError>>, IndexError>;
    /// Folds recent writes into the indexes (after an indexing run), and
    /// trains the vector index the first time the store is big enough for
    /// one (see [`Folded`]).
    async fn optimize(&self) -> Result<Folded, IndexError>;
    /// The vector index as it stands. A store without one (the default)
    /// answers its row count alone.
    async fn vector_index(&self) -> Result<VectorIndex, IndexError> {
        Ok(VectorIndex { rows: self.count(None).await?, indexed: None, outdated: false })
    }
    /// Commits written by this handle since it last merged small writes
    /// ([`ChunkStore::merge_small_writes`]); a store whose writes cost the
    /// same however many came before (the default) counts none.
    fn small_writes(&self) -> usize {
        0
    }
    /// Merges what many small commits left behind (a crawl writes a page at
    /// a time) so that the next commit costs what the first did; indexes
    /// and earlier versions are left as they are. A store with nothing to
    /// merge (the default) does nothing.
    async fn merge_small_writes(&self) -> Result<(), IndexError> {
        Ok(())
    }
    /// Trains the vector index anew on every stored row and swaps it in with
    /// one commit: searches use the previous index until then, and rows
    /// written meanwhile stay searchable (exactly, until the next
    /// [`ChunkStore::optimize`] folds them in). A store without a vector
    /// index (the default) has nothing to train.
    async fn retrain_vector_index(&self) -> Result<(), IndexError> {
        Ok(())
    }
    /// `content hash → vector` of the chunks stored for `documents`: a
    /// changed document's chunks whose text did not change keep their
    /// vectors instead of being embedded again. A store that cannot say
    /// (the default) answers none, and everything is embedded.
    async fn stored_vectors(
        &self,
        _documents: &[String],
    ) -> Result<std::collections::HashMap<String, Vec<f32>>, IndexError> {
        Ok(std::collections::HashMap::new())
    }
}

/// A SQL string literal for LanceDB filters.
pub fn quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

/// The chunks of a source, of its views too. Source ids are UUIDs, so
/// LIKE's wildcards never occur in one.
pub(crate) fn source_filter(source_id: &str) -> String {
    format!(
        "(source_id = {} OR source_id LIKE {})",
        quote(source_id),
        quote(&format!("{source_id}{VIEW_SEPARATOR}%"))
    )
}

/// `source_id IN (...)`, of scope ids.
pub(crate) fn sources_filter(sources: &[String]) -> String {
    let list: Vec<String> = sources.iter().map(|s| quote(s)).collect();
    format!("source_id IN ({})", list.join(", "))
}
