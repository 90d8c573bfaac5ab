//! [`ChunkStore`] on LanceDB: one table of chunks (`chunks` unless a judged
//! embedding model's shadow index was adopted) with a full-text index on
//! `text`. Documents are replaced with one `merge_insert` (update matching
//! ids, insert new ones, delete the documents' leftovers), which LanceDB
//! commits as a single version; new documents are appended, which spares
//! the merge's scan of the whole table.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use arrow_array::types::Float32Type;
use arrow_array::{
    Array, FixedSizeListArray, Float32Array, RecordBatch, RecordBatchIterator, RecordBatchReader,
    StringArray, UInt32Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use async_trait::async_trait;
use futures::stream::BoxStream;
use futures::TryStreamExt;
use lancedb::index::scalar::{FtsIndexBuilder, FullTextSearchQuery};
use lancedb::index::vector::IvfHnswSqIndexBuilder;
use lancedb::index::{Index, IndexConfig, IndexType};
use lancedb::query::{ExecutableQuery, QueryBase};
use lancedb::table::{CompactionOptions, OptimizeAction, OptimizeOptions};
use lancedb::{DistanceType, Table};

use super::{quote, sources_filter, ChunkRow, ChunkStore, Folded, Hit, IndexError, Scope, VectorIndex};

/// The table of chunks until a judged embedding model's shadow index is adopted.
pub const DEFAULT_TABLE: &str = "chunks";

/// From this many rows on, `optimize` builds a vector index (IVF_HNSW_SQ,
/// cosine); below it a flat scan is as fast. `lore bench index` (README,
/// Measurements) measured hybrid retrieval, query embedding included, flat
/// and indexed: a flat scan decodes every stored vector on each query and
/// grows by about 1.1 ms per 1,000 rows (14.6 ms p50 at 2k rows, 21.6 at
/// 10k, 32.8 at 20k), while the indexed search stays near 17 to 19 ms. At 5k
/// rows the two are even at p50 and the index is ahead at p95 (20.2 against
/// 22.8 ms), with a recall@20 of 1.000 against the flat scan and a build of
/// under a second; at 10k it saves 5 ms at p50 (recall 0.995).
pub const VECTOR_INDEX_MIN_ROWS: usize = 5_000;

/// The vector index Lore builds: IVF partitions (LanceDB makes one per
/// million rows), each an HNSW graph over 8-bit scalar-quantised vectors.
/// It replaced IVF_PQ with exact re-ranking (issue 58): at the same recall
/// of the final top 10, `lore bench retrieval` measured a quicker vector
/// stage and more `/retrieve` requests per second at 10,000 and 100,000
/// chunks, with no re-read of stored vectors per query
/// (`bench-results/README.md`, "The vector index's kind"; the reasons and
/// costs in `docs/decisions.md`). An IVF_PQ index built by an earlier version is
/// still searched as it was built to be ([`PQ_NPROBES`],
/// [`PQ_REFINE_FACTOR`]) until the index upkeep trains it anew as this kind
/// (`upkeep::due`).
pub const VECTOR_INDEX: IndexType = IndexType::IvfHnswSq;

/// The rows a fragment (one of the table's data files) is merged up to.
/// Every LanceDB commit writes a manifest listing every fragment, and each
/// write adds one: a million chunks written a page at a time (as a crawl
/// writes them) left 18,000 fragments, a manifest of about a megabyte
/// written again on every commit, 15 GB of manifests beside 2 GB of data,
/// and writes slowed from 4,700 rows/s to 50 (`bench-results/README.md`,
/// "A million chunks"). Merging keeps the fragments few. A merge leaves
/// fragments of this size alone, so it rewrites only recent small ones,
/// not the table (LanceDB's default target, a million rows, would rewrite
/// every fragment of a smaller table on each fold): a million chunks are
/// 50 fragments.
pub const FRAGMENT_ROWS: usize = 20_000;

/// The commits after which an indexing run merges what it wrote
/// (`upkeep::merge_when_due`): the manifest then lists at most about
/// this many small fragments beside the merged ones, and each small
/// fragment's rows are rewritten a few times at most before they make up a
/// full one.
pub const MERGE_AFTER_WRITES: usize = 64;

/// How long versions of the table are kept after a newer one replaced
/// them (LanceDB's own default). Lore searches only the latest version,
/// but a shadow index's build streams the active table from the version it
/// began with while it embeds every chunk again, hours at a million chunks
/// on this hardware: removing the files that version refers to under it
/// would fail the build. Older versions, their manifests and the data only
/// they refer to are removed by the fold after an indexing run.
pub const KEEP_VERSIONS_DAYS: i64 = 7;

/// IVF partitions searched per query: with a partition per million rows,
/// every partition up to two million.
pub const NPROBES: usize = 2;

/// HNSW's breadth of search: the candidates each partition's graph walk
/// keeps (at least the rows asked for). Wider finds more of the exact
/// nearest for a longer walk.
pub const EF: usize = 100;

/// How an IVF_PQ index of an earlier version is searched: partitions probed,
/// and candidates per result re-ranked with exact distances. `lore bench
/// index` at 10k rows (near-copies of 2,000 chunks, the hardest case for
/// 8-bit codes) measured recall@20 against the flat scan of 0.33, 0.67,
/// 0.95, 0.99 and 1.00 re-ranking 1, 2, 3, 5 and 10 candidates per result.
pub const PQ_NPROBES: usize = 20;
pub const PQ_REFINE_FACTOR: u32 = 10;

/// How hard a search of an index works: partitions probed, candidates per
/// result re-ranked with exact distances (IVF_PQ), and HNSW's breadth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SearchEffort {
    pub nprobes: usize,
    pub refine_factor: Option<u32>,
    pub ef: Option<usize>,
}

/// The effort a search of an index of `kind` asks for.
pub fn search_effort(kind: &IndexType) -> SearchEffort {
    match kind {
        IndexType::IvfPq => {
            SearchEffort { nprobes: PQ_NPROBES, refine_factor: Some(PQ_REFINE_FACTOR), ef: None }
        }
        _ => SearchEffort { nprobes: NPROBES, refine_factor: None, ef: Some(EF) },
    }
}

pub use crate::settings::{object_store_scheme, Location, OBJECT_STORE_SCHEMES};

/// A LanceDB connection to `at`, with its storage options.
pub fn connect(at: &Location) -> lancedb::connection::ConnectBuilder {
    let builder = lancedb::connect(&at.uri);
    if at.options.is_empty() {
        builder
    } else {
        builder.storage_options(at.options.iter().map(|(key, value)| (key.clone(), value.clone())))
    }
}

pub struct LanceChunkStore {
    table: Table,
    schema: SchemaRef,
    dimensions: usize,
    hashes: Mutex<HashMemo>,
    /// The vector index's kind as last read, with the table version it was
    /// read at: a search asks for what that kind needs.
    kind: Mutex<Option<(u64, Option<IndexType>)>>,
    /// Commits by this handle since it last merged fragments.
    writes: AtomicUsize,
    /// Search without the vector index (see [`LanceChunkStore::exact`]).
    exact: bool,
}

/// `chunk id → (source id, content hash)` as last read: the answer cache
/// checks the same few cited chunks on every hit, and a LanceDB query costs
/// milliseconds of planning. Every write empties it and bumps `generation`,
/// so a read that overlapped a write never stores what the write changed;
/// so does a new table version written by another process (`lore ingest`
/// beside `lore serve`), seen within [`OTHER_WRITERS_SEEN_WITHIN`].
#[derive(Default)]
struct HashMemo {
    generation: u64,
    table_version: u64,
    known: HashMap<String, (String, String)>,
}

/// How soon a read sees what another process wrote to the table (LanceDB's
/// read consistency interval): `lore ingest` or `lore sources reindex`
/// beside a running server. Unset, LanceDB never looks, and the server would
/// search its first snapshot until it wrote itself; checking on every read
/// would cost a manifest lookup per query.
pub const OTHER_WRITERS_SEEN_WITHIN: std::time::Duration = std::time::Duration::from_secs(1);

pub fn store_error(err: impl std::fmt::Display) -> IndexError {
    IndexError::Store(err.to_string())
}

/// The schema of a Lore table: `columns` (name, type, nullable), then the
/// `vector` column of `dimensions` floats that every Lore table ends with
/// (the chunks, the answer cache).
pub fn schema_with_vector(columns: &[(&str, DataType, bool)], dimensions: usize) -> SchemaRef {
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let vector = Field::new("vector", DataType::FixedSizeList(item, dimensions as i32), false);
    let fields = columns.iter().map(|(name, kind, nullable)| Field::new(*name, kind.clone(), *nullable));
    Arc::new(Schema::new(fields.chain([vector]).collect::<Vec<_>>()))
}

fn schema(dimensions: usize) -> SchemaRef {
    use DataType::{UInt32, Utf8};
    let columns = [
        ("id", Utf8, false),
        ("source_id", Utf8, false),
        ("document_id", Utf8, false),
        ("title", Utf8, false),
        ("url", Utf8, true),
        ("heading", Utf8, true),
        ("position", UInt32, false),
        ("text", Utf8, false),
        ("content_hash", Utf8, false),
    ];
    schema_with_vector(&columns, dimensions)
}

impl LanceChunkStore {
    /// Opens (or creates, with its full-text index) the `chunks` table at `at`.
    pub async fn open(at: &Location, dimensions: usize) -> Result<Self, IndexError> {
        Self::open_table(at, DEFAULT_TABLE, dimensions).await
    }

    /// Opens (or creates, with its full-text index) table `name` at `at`.
    pub async fn open_table(at: &Location, name: &str, dimensions: usize) -> Result<Self, IndexError> {
        let db = connect(at)
            .read_consistency_interval(OTHER_WRITERS_SEEN_WITHIN)
            .execute()
            .await
            .map_err(store_error)?;
        let schema = schema(dimensions);
        let exists = db.table_names().execute().await.map_err(store_error)?.iter().any(|found| found == name);
        let table = if exists {
            db.open_table(name).execute().await.map_err(store_error)?
        } else {
            let table = db.create_empty_table(name, schema.clone()).execute().await.map_err(store_error)?;
            table
                .create_index(&["text"], Index::FTS(FtsIndexBuilder::default()))
                .execute()
                .await
                .map_err(store_error)?;
            table
        };
        let stored = table.schema().await.map_err(store_error)?;
        if let Ok(field) = stored.field_with_name("vector") {
            if let DataType::FixedSizeList(_, size) = field.data_type() {
                if *size as usize != dimensions {
                    return Err(IndexError::Dimensions { expected: *size as usize, got: dimensions });
                }
            }
        }
        Ok(Self {
            table,
            schema,
            dimensions,
            hashes: Mutex::new(HashMemo::default()),
            kind: Mutex::new(None),
            writes: AtomicUsize::new(0),
            exact: false,
        })
    }

    fn memo(&self) -> std::sync::MutexGuard<'_, HashMemo> {
        // Each change to the memo is one step: a poisoned lock is still whole.
        self.hashes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// After a write (whether or not it succeeded): what was read before it
    /// may be stale.
    fn forget_hashes(&self) {
        let mut memo = self.memo();
        memo.generation += 1;
        memo.known.clear();
    }

    /// After a commit (whether or not it succeeded): forgets what may be
    /// stale, and counts the commit towards the next merge.
    fn wrote(&self) {
        self.forget_hashes();
        self.writes.fetch_add(1, Ordering::Relaxed);
    }

    /// Drops table `name` and creates it empty for `dimensions`.
    pub async fn recreate(at: &Location, name: &str, dimensions: usize) -> Result<Self, IndexError> {
        drop_tables(at, |found| found == name).await?;
        Self::open_table(at, name, dimensions).await
    }

    fn batch(&self, rows: &[ChunkRow]) -> Result<RecordBatch, IndexError> {
        if let Some(row) = rows.iter().find(|row| row.vector.len() != self.dimensions) {
            return Err(IndexError::Dimensions { expected: self.dimensions, got: row.vector.len() });
        }
        let strings = |f: fn(&ChunkRow) -> &str| Arc::new(StringArray::from_iter_values(rows.iter().map(f)));
        let optional =
            |f: fn(&ChunkRow) -> Option<&str>| Arc::new(rows.iter().map(f).collect::<StringArray>());
        let vectors = FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
            rows.iter().map(|row| Some(row.vector.iter().copied().map(Some).collect::<Vec<_>>())),
            self.dimensions as i32,
        );
        RecordBatch::try_new(
            self.schema.clone(),
            vec![
                strings(|r| &r.id),
                Arc::new(StringArray::from_iter_values(rows.iter().map(ChunkRow::scope_id))),
                strings(|r| &r.document_id),
                strings(|r| &r.title),
                optional(|r| r.url.as_deref()),
                optional(|r| r.heading.as_deref()),
                Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.position))),
                strings(|r| &r.text),
                strings(|r| &r.content_hash),
                Arc::new(vectors),
            ],
        )
        .map_err(store_error)
    }

    /// Appends rows without replacing anything (bulk loads, benchmarks).
    pub async fn append(&self, rows: Vec<ChunkRow>) -> Result<(), IndexError> {
        let batch = self.batch(&rows)?;
        let reader: Box<dyn RecordBatchReader + Send> =
            Box::new(RecordBatchIterator::new(vec![Ok(batch)], self.schema.clone()));
        let added = self.table.add(reader).execute().await;
        self.wrote();
        added.map_err(store_error)?;
        Ok(())
    }

    /// Merges small fragments, removes versions older than
    /// [`KEEP_VERSIONS_DAYS`], and folds new rows into the existing
    /// indexes, without building a vector index (see [`ChunkStore::optimize`]).
    pub async fn compact(&self) -> Result<(), IndexError> {
        self.merge_fragments().await?;
        let prune = OptimizeAction::Prune {
            older_than: lancedb::table::Duration::try_days(KEEP_VERSIONS_DAYS),
            delete_unverified: None,
            error_if_tagged_old_versions: None,
        };
        self.table.optimize(prune).await.map_err(store_error)?;
        self.table.optimize(OptimizeAction::Index(OptimizeOptions::default())).await.map_err(store_error)?;
        Ok(())
    }

    /// Merges fragments smaller than [`FRAGMENT_ROWS`] (and materialises
    /// deletions in those a tenth deleted), remapping the indexes to the
    /// rows' new places; a search meanwhile reads the version before.
    async fn merge_fragments(&self) -> Result<(), IndexError> {
        self.writes.store(0, Ordering::Relaxed);
        let options = CompactionOptions { target_rows_per_fragment: FRAGMENT_ROWS, ..Default::default() };
        self.table
            .optimize(OptimizeAction::Compact { options, remap_options: None })
            .await
            .map_err(store_error)?;
        Ok(())
    }

    /// Builds (or rebuilds) the vector index, of the kind [`VECTOR_INDEX`]
    /// says. LanceDB commits it in one step: searches use the previous one
    /// until then.
    pub async fn build_vector_index(&self) -> Result<(), IndexError> {
        let builder = IvfHnswSqIndexBuilder::default().distance_type(DistanceType::Cosine);
        self.table
            .create_index(&["vector"], Index::IvfHnswSq(builder))
            .replace(true)
            .execute()
            .await
            .map_err(store_error)
    }

    /// The table's fragments: its data files, each written by one commit or
    /// merged from several (see [`FRAGMENT_ROWS`]).
    pub async fn fragments(&self) -> Result<usize, IndexError> {
        Ok(self.table.stats().await.map_err(store_error)?.fragment_stats.num_fragments)
    }

    /// The table's version: one more with each commit (a write, a merge,
    /// an index).
    pub async fn version(&self) -> Result<u64, IndexError> {
        self.table.version().await.map_err(store_error)
    }

    /// The same table searched without its vector index, every vector
    /// compared: the reference that tests and `lore bench retrieval` hold
    /// the index's results to.
    pub fn exact(&self) -> Self {
        Self {
            table: self.table.clone(),
            schema: self.schema.clone(),
            dimensions: self.dimensions,
            hashes: Mutex::new(HashMemo::default()),
            kind: Mutex::new(None),
            writes: AtomicUsize::new(0),
            exact: true,
        }
    }

    /// Whether the table has a vector index (else searches scan flat).
    pub async fn has_vector_index(&self) -> Result<bool, IndexError> {
        Ok(self.vector_index_kind().await?.is_some())
    }

    /// The kind of the table's vector index, if it has one: read once per
    /// table version (this process's writes and, within
    /// [`OTHER_WRITERS_SEEN_WITHIN`], another's make a new one).
    async fn vector_index_kind(&self) -> Result<Option<IndexType>, IndexError> {
        let version = self.table.version().await.map_err(store_error)?;
        let known = self.kind.lock().unwrap_or_else(PoisonError::into_inner).clone();
        if let Some((at, kind)) = known {
            if at == version {
                return Ok(kind);
            }
        }
        let kind = self.vector_column_index().await?.map(|index| index.index_type);
        *self.kind.lock().unwrap_or_else(PoisonError::into_inner) = Some((version, kind.clone()));
        Ok(kind)
    }

    /// The index on the `vector` column, if there is one.
    async fn vector_column_index(&self) -> Result<Option<IndexConfig>, IndexError> {
        let indices = self.table.list_indices().await.map_err(store_error)?;
        Ok(indices.into_iter().find(|index| index.columns.iter().any(|c| c == "vector")))
    }

    async fn collect(
        &self,
        stream: lancedb::arrow::SendableRecordBatchStream,
        score: &str,
    ) -> Result<Vec<Hit>, IndexError> {
        let batches: Vec<RecordBatch> = stream.try_collect().await.map_err(store_error)?;
        let mut hits = Vec::new();
        for batch in &batches {
            hits.extend(rows_of(batch, score)?);
        }
        Ok(hits)
    }
}

/// The vector size of table `name` at `at`, if it exists.
pub async fn stored_dimensions(at: &Location, name: &str) -> Result<Option<usize>, IndexError> {
    let db = connect(at).execute().await.map_err(store_error)?;
    if !db.table_names().execute().await.map_err(store_error)?.iter().any(|found| found == name) {
        return Ok(None);
    }
    let table = db.open_table(name).execute().await.map_err(store_error)?;
    let schema = table.schema().await.map_err(store_error)?;
    Ok(match schema.field_with_name("vector").map(|field| field.data_type().clone()) {
        Ok(DataType::FixedSizeList(_, size)) => Some(size as usize),
        _ => None,
    })
}

/// Drops every table at `at` whose name `doomed` picks; returns their names.
pub async fn drop_tables(at: &Location, doomed: impl Fn(&str) -> bool) -> Result<Vec<String>, IndexError> {
    let db = connect(at).execute().await.map_err(store_error)?;
    let names: Vec<String> =
        db.table_names().execute().await.map_err(store_error)?.into_iter().filter(|n| doomed(n)).collect();
    for name in &names {
        db.drop_table(name, &[]).await.map_err(store_error)?;
    }
    Ok(names)
}

/// A result column by name, as its Arrow array type.
pub fn column<'a, T: 'static>(batch: &'a RecordBatch, name: &str) -> Result<&'a T, IndexError> {
    batch
        .column_by_name(name)
        .and_then(|column| column.as_any().downcast_ref::<T>())
        .ok_or_else(|| IndexError::Store(format!("the result has no usable column {name}")))
}

/// Reads hits out of a result batch; `score` names the score column
/// (`_distance` for vectors, turned into a similarity; `_score` for text).
fn rows_of(batch: &RecordBatch, score: &str) -> Result<Vec<Hit>, IndexError> {
    let scores = column::<Float32Array>(batch, score)?;
    Ok(chunk_rows(batch)?
        .into_iter()
        .enumerate()
        .map(|(i, chunk)| {
            let raw = scores.value(i);
            Hit { score: if score == "_distance" { 1.0 - raw } else { raw }, chunk }
        })
        .collect())
}

/// Reads the chunks out of a result batch.
fn chunk_rows(batch: &RecordBatch) -> Result<Vec<ChunkRow>, IndexError> {
    let text = |name| column::<StringArray>(batch, name);
    let (id, source, document, title, url, heading, body, hash) = (
        text("id")?,
        text("source_id")?,
        text("document_id")?,
        text("title")?,
        text("url")?,
        text("heading")?,
        text("text")?,
        text("content_hash")?,
    );
    let position = column::<UInt32Array>(batch, "position")?;
    let vectors = column::<FixedSizeListArray>(batch, "vector")?;
    let optional = |array: &StringArray, i: usize| (!array.is_null(i)).then(|| array.value(i).to_owned());
    (0..batch.num_rows())
        .map(|i| {
            let vector = vectors.value(i);
            let vector = vector
                .as_any()
                .downcast_ref::<Float32Array>()
                .ok_or_else(|| IndexError::Store("vectors are not f32".into()))?
                .values()
                .to_vec();
            let (source_id, view) = super::split_scope_id(source.value(i));
            Ok(ChunkRow {
                id: id.value(i).to_owned(),
                source_id: source_id.to_owned(),
                view: view.map(str::to_owned),
                document_id: document.value(i).to_owned(),
                title: title.value(i).to_owned(),
                url: optional(url, i),
                heading: optional(heading, i),
                position: position.value(i),
                text: body.value(i).to_owned(),
                content_hash: hash.value(i).to_owned(),
                vector,
            })
        })
        .collect()
}

/// `document_id IN (...)`.
fn documents_filter(ids: &[String]) -> String {
    let list: Vec<String> = ids.iter().map(|id| quote(id)).collect();
    format!("document_id IN ({})", list.join(", "))
}

/// The filter a search of `scope` needs: none when it covers every source.
fn scoped(scope: &Scope) -> Option<String> {
    (!scope.every_source).then(|| sources_filter(&scope.sources))
}

/// Drops hits outside `scope`: after an unfiltered search, a chunk of a
/// source deleted while it was being indexed.
fn in_scope(mut hits: Vec<Hit>, scope: &Scope) -> Vec<Hit> {
    if scope.every_source {
        hits.retain(|hit| scope.covers(&hit.chunk.scope_id()));
    }
    hits
}

#[async_trait]
impl ChunkStore for LanceChunkStore {
    async fn write_documents(&self, replaced: &[String], rows: Vec<ChunkRow>) -> Result<(), IndexError> {
        match (replaced.is_empty(), rows.is_empty()) {
            (true, true) => Ok(()),
            // New documents only: an append spares the merge's scan of the table.
            (true, false) => self.append(rows).await,
            (false, true) => {
                let deleted = self.table.delete(&documents_filter(replaced)).await;
                self.wrote();
                deleted.map_err(store_error)?;
                Ok(())
            }
            (false, false) => {
                let batch = self.batch(&rows)?;
                let reader: Box<dyn RecordBatchReader + Send> =
                    Box::new(RecordBatchIterator::new(vec![Ok(batch)], self.schema.clone()));
                let mut merge = self.table.merge_insert(&["id"]);
                merge
                    .when_matched_update_all(None)
                    .when_not_matched_insert_all()
                    .when_not_matched_by_source_delete(Some(documents_filter(replaced)));
                let merged = merge.execute(reader).await;
                self.wrote();
                merged.map_err(store_error)?;
                Ok(())
            }
        }
    }

    async fn delete_source(&self, source_id: &str) -> Result<(), IndexError> {
        let deleted = self.table.delete(&super::source_filter(source_id)).await;
        self.wrote();
        deleted.map_err(store_error)?;
        Ok(())
    }

    async fn vector_search(
        &self,
        vector: &[f32],
        scope: &Scope,
        limit: usize,
    ) -> Result<Vec<Hit>, IndexError> {
        if scope.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let query =
            self.table.query().nearest_to(vector).map_err(store_error)?.distance_type(DistanceType::Cosine);
        let query = match (self.exact, self.vector_index_kind().await?) {
            (true, _) | (false, None) => query.bypass_vector_index(),
            (false, Some(kind)) => {
                let effort = search_effort(&kind);
                let query = query.nprobes(effort.nprobes).map_err(store_error)?;
                let query = match effort.refine_factor {
                    Some(factor) => query.refine_factor(factor),
                    None => query,
                };
                match effort.ef {
                    Some(ef) => query.ef(ef.max(limit)),
                    None => query,
                }
            }
        };
        let query = query.limit(limit);
        let query = match scoped(scope) {
            Some(filter) => query.only_if(filter),
            None => query,
        };
        let stream = query.execute().await.map_err(store_error)?;
        Ok(in_scope(self.collect(stream, "_distance").await?, scope))
    }

    async fn text_search(&self, query: &str, scope: &Scope, limit: usize) -> Result<Vec<Hit>, IndexError> {
        if scope.is_empty() || limit == 0 || query.trim().is_empty() {
            return Ok(Vec::new());
        }
        let query =
            self.table.query().full_text_search(FullTextSearchQuery::new(query.to_owned())).limit(limit);
        let query = match scoped(scope) {
            Some(filter) => query.only_if(filter),
            None => query,
        };
        let stream = query.execute().await.map_err(store_error)?;
        Ok(in_scope(self.collect(stream, "_score").await?, scope))
    }

    async fn count(&self, source_id: Option<&str>) -> Result<usize, IndexError> {
        self.table.count_rows(source_id.map(super::source_filter)).await.map_err(store_error)
    }

    async fn content_hashes(&self, ids: &[String]) -> Result<HashMap<String, (String, String)>, IndexError> {
        // Another process's write shows as a new version: forget what was read.
        let version = self.table.version().await.map_err(store_error)?;
        let (generation, mut found, missing) = {
            let mut memo = self.memo();
            if memo.table_version != version {
                memo.table_version = version;
                memo.generation += 1;
                memo.known.clear();
            }
            let mut found = HashMap::new();
            let mut missing = Vec::new();
            for id in ids {
                match memo.known.get(id) {
                    Some(known) => {
                        found.insert(id.clone(), known.clone());
                    }
                    None => missing.push(quote(id)),
                }
            }
            (memo.generation, found, missing)
        };
        if missing.is_empty() {
            return Ok(found);
        }
        let stream = self
            .table
            .query()
            .only_if(format!("id IN ({})", missing.join(", ")))
            .select(lancedb::query::Select::columns(&["id", "source_id", "content_hash"]))
            .execute()
            .await
            .map_err(store_error)?;
        let batches: Vec<RecordBatch> = stream.try_collect().await.map_err(store_error)?;
        let mut read = HashMap::new();
        for batch in &batches {
            let (id, source, hash) = (
                column::<StringArray>(batch, "id")?,
                column::<StringArray>(batch, "source_id")?,
                column::<StringArray>(batch, "content_hash")?,
            );
            for i in 0..batch.num_rows() {
                read.insert(id.value(i).to_owned(), (source.value(i).to_owned(), hash.value(i).to_owned()));
            }
        }
        let mut memo = self.memo();
        if memo.generation == generation {
            memo.known.extend(read.iter().map(|(id, known)| (id.clone(), known.clone())));
        }
        found.extend(read);
        Ok(found)
    }

    async fn stored_vectors(&self, documents: &[String]) -> Result<HashMap<String, Vec<f32>>, IndexError> {
        let mut vectors = HashMap::new();
        for part in documents.chunks(500) {
            let stream = self
                .table
                .query()
                .only_if(documents_filter(part))
                .select(lancedb::query::Select::columns(&["content_hash", "vector"]))
                .execute()
                .await
                .map_err(store_error)?;
            let batches: Vec<RecordBatch> = stream.try_collect().await.map_err(store_error)?;
            for batch in &batches {
                let hashes = column::<StringArray>(batch, "content_hash")?;
                let stored = column::<FixedSizeListArray>(batch, "vector")?;
                for i in 0..batch.num_rows() {
                    let vector = stored.value(i);
                    let values = vector
                        .as_any()
                        .downcast_ref::<Float32Array>()
                        .ok_or_else(|| IndexError::Store("vectors are not f32".into()))?;
                    vectors.insert(hashes.value(i).to_owned(), values.values().to_vec());
                }
            }
        }
        Ok(vectors)
    }

    async fn scan(&self) -> Result<BoxStream<'static, Result<Vec<ChunkRow>, IndexError>>, IndexError> {
        let stream = self.table.query().execute().await.map_err(store_error)?;
        Ok(Box::pin(stream.map_err(store_error).and_then(|batch| async move { chunk_rows(&batch) })))
    }

    async fn optimize(&self) -> Result<Folded, IndexError> {
        self.compact().await?;
        let rows = self.count(None).await?;
        if rows >= VECTOR_INDEX_MIN_ROWS && !self.has_vector_index().await? {
            self.build_vector_index().await?;
            return Ok(Folded { trained: Some(rows) });
        }
        Ok(Folded::default())
    }

    async fn vector_index(&self) -> Result<VectorIndex, IndexError> {
        let rows = self.count(None).await?;
        let Some(index) = self.vector_column_index().await? else {
            return Ok(VectorIndex { rows, indexed: None, outdated: false });
        };
        let stats = self.table.index_stats(&index.name).await.map_err(store_error)?;
        Ok(VectorIndex {
            rows,
            indexed: Some(stats.map_or(0, |stats| stats.num_indexed_rows)),
            outdated: index.index_type != VECTOR_INDEX,
        })
    }

    async fn retrain_vector_index(&self) -> Result<(), IndexError> {
        self.build_vector_index().await
    }

    fn small_writes(&self) -> usize {
        self.writes.load(Ordering::Relaxed)
    }

    async fn merge_small_writes(&self) -> Result<(), IndexError> {
        self.merge_fragments().await
    }
}
