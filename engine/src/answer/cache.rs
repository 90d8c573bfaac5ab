//! The answer cache, a LanceDB table beside `chunks`: one row per cached
//! answer with the normalised question, its embedding, the profile version
//! that made it, the answer itself and the content hashes of the chunks it
//! cites.
//!
//! The table is what survives a restart; lookups read a copy of it held in
//! memory, loaded when the cache opens. A lookup is then a scan of a few
//! thousand entries (a hash compare, or a 384-wide dot product each: well
//! under a millisecond) instead of a LanceDB query, whose planning alone
//! costs several. The copy costs the size of the cached answers, a few KB
//! each.
//!
//! Inserts and deletes change the copy at once and reach the table behind
//! the request, through one writer task that applies them in order: a
//! LanceDB append writes a data file and a manifest, milliseconds a miss's
//! caller need not wait for. The price is that a crash can lose the last
//! few writes, which a cache can afford (a lost insert is answered again; a
//! lost delete leaves an entry that fails validation again on its next
//! lookup). [`AnswerCache::flush`] waits for the writes queued so far. The
//! writer also compacts the table every [`COMPACT_EVERY`] writes, so that
//! one-row appends do not pile up as thousands of fragments to open.
//!
//! - **Exact**: the same normalised question under the same profile version.
//! - **Semantic**: the nearest cached question under the same version, when
//!   its cosine similarity reaches the version's gate.
//!
//! Both look only at entries made for the same visible scope
//! ([`crate::index::Scope::key`]): an answer is served only to callers who
//! may read exactly what the caller it was made for could, so nothing a
//! caller may not read reaches it through a passage the model saw, cited
//! or not (docs/decisions.md, "Cached answers and who asks").
//!
//! Either way an entry serves only while it is valid: younger than its
//! maximum age (the gate's, scaled by the volatility the sources it cites
//! have now: the answer pipeline decides it at lookup), grounded when the
//! gates want that, and every cited chunk still stored with the same
//! content hash. An invalid entry found on lookup
//! is deleted. A new profile version never sees an older version's entries,
//! nor a restored version those it made before it was restored; each new
//! entry prunes the ones that can never serve again ([`AnswerCache::prune`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use arrow_array::types::Float32Type;
use arrow_array::{
    Array, BooleanArray, FixedSizeListArray, Float32Array, Int32Array, Int64Array, RecordBatch,
    RecordBatchIterator, RecordBatchReader, StringArray,
};
use arrow_schema::{DataType, SchemaRef};
use chrono::{DateTime, Utc};
use futures::TryStreamExt;
use lancedb::query::ExecutableQuery;
use lancedb::table::OptimizeAction;
use lancedb::Table;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

use crate::index::lance::{column, connect, schema_with_vector, store_error, Location};
use crate::index::{quote, IndexError};

pub const TABLE: &str = "answer_cache";

/// Writes queued for the table before a request waits for room: the writer
/// keeps up easily (misses are paced by model calls), so this only bounds
/// memory when LanceDB stalls.
const QUEUED_WRITES: usize = 1024;

/// The writer compacts the table after this many writes.
pub const COMPACT_EVERY: usize = 200;

/// A chunk an answer cites, as it was when the answer was made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CitedChunk {
    pub chunk_id: String,
    pub content_hash: String,
}

/// One cached answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub id: String,
    pub question: String,
    pub profile_version: i32,
    /// The key of the visible scope it was answered over.
    pub scope: String,
    pub created_at: DateTime<Utc>,
    pub grounded: bool,
    /// The answer as served (text, citations, model), as JSON.
    pub payload: serde_json::Value,
    pub cited: Vec<CitedChunk>,
    pub vector: Vec<f32>,
}

pub struct AnswerCache {
    /// For reading only: the writer task makes every change.
    table: Table,
    dimensions: usize,
    /// Every entry, in memory: the table's rows plus the writes queued for it.
    entries: RwLock<Vec<Entry>>,
    /// The visible scope each audience (`admin`, `everyone`, `role:NAME`)
    /// last searched with, in this process: what [`AnswerCache::knows`]
    /// looks in before the request knows its own scope.
    scopes: Mutex<HashMap<String, String>>,
    /// To the task that applies inserts and deletes to the table.
    writes: mpsc::Sender<Write>,
}

/// A change for the table's writer.
enum Write {
    Insert(Box<Entry>),
    Delete(String),
    DeleteMany(Vec<String>),
    /// Answered once every write queued before it is applied.
    Flush(oneshot::Sender<()>),
}

fn schema(dimensions: usize) -> SchemaRef {
    use DataType::{Boolean, Int32, Int64, Utf8};
    let columns = [
        ("id", Utf8, false),
        ("question", Utf8, false),
        ("profile_version", Int32, false),
        ("scope", Utf8, false),
        ("created_at_ms", Int64, false),
        ("grounded", Boolean, false),
        ("payload", Utf8, false),
        ("cited", Utf8, false),
    ];
    schema_with_vector(&columns, dimensions)
}

impl AnswerCache {
    /// Opens the cache table at `at`, creating it; a table of another vector
    /// size (the embedding model changed) or another layout (an older Lore)
    /// is dropped and made anew: a cache loses nothing it cannot rebuild.
    /// Starts the table's writer task.
    pub async fn open(at: &Location, dimensions: usize) -> Result<Self, IndexError> {
        let db = connect(at).execute().await.map_err(store_error)?;
        let schema = schema(dimensions);
        let exists = db.table_names().execute().await.map_err(store_error)?.iter().any(|n| n == TABLE);
        let mut loaded = None;
        if exists {
            let table = db.open_table(TABLE).execute().await.map_err(store_error)?;
            let stored = table.schema().await.map_err(store_error)?;
            // Same columns of the same types (the vector's size among them).
            let same_layout = stored.fields().len() == schema.fields().len()
                && stored.fields().iter().zip(schema.fields()).all(|(found, wanted)| {
                    found.name() == wanted.name() && found.data_type() == wanted.data_type()
                });
            if same_layout {
                let stream = table.query().execute().await.map_err(store_error)?;
                let batches: Vec<RecordBatch> = stream.try_collect().await.map_err(store_error)?;
                let mut entries = Vec::new();
                for batch in &batches {
                    entries.extend(entries_of(batch)?);
                }
                loaded = Some((table, entries));
            } else {
                db.drop_table(TABLE, &[]).await.map_err(store_error)?;
            }
        }
        let (table, entries) = match loaded {
            Some(loaded) => loaded,
            None => (
                db.create_empty_table(TABLE, schema.clone()).execute().await.map_err(store_error)?,
                Vec::new(),
            ),
        };
        let (writes, queued) = mpsc::channel(QUEUED_WRITES);
        tokio::spawn(Writer { table: table.clone(), schema, dimensions, since_compaction: 0 }.run(queued));
        Ok(Self { table, dimensions, entries: RwLock::new(entries), writes, scopes: Mutex::default() })
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<Entry>> {
        // A panic while holding the lock cannot leave the Vec half-changed
        // (pushes and removals are single steps), so a poisoned lock is usable.
        self.entries.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Vec<Entry>> {
        self.entries.write().unwrap_or_else(PoisonError::into_inner)
    }

    async fn queue(&self, write: Write) -> Result<(), IndexError> {
        self.writes
            .send(write)
            .await
            .map_err(|_| IndexError::Store("the answer cache's writer has stopped".into()))
    }

    /// Adds `entry`: lookups see it at once, the table once the writer has
    /// appended it.
    pub async fn insert(&self, entry: &Entry) -> Result<(), IndexError> {
        if entry.vector.len() != self.dimensions {
            return Err(IndexError::Dimensions { expected: self.dimensions, got: entry.vector.len() });
        }
        self.write().push(entry.clone());
        self.queue(Write::Insert(Box::new(entry.clone()))).await
    }

    /// Whether an entry, of any version, is for this normalised question in
    /// the scope `audience` last searched with (none before its first
    /// search). Entries of other scopes never count: whether someone who
    /// reads otherwise asked the same words must not show, in a trace or in
    /// the time a request takes.
    pub fn knows(&self, question: &str, audience: &str) -> bool {
        let scopes = self.scopes.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(scope) = scopes.get(audience) else { return false };
        self.read().iter().any(|entry| entry.question == question && &entry.scope == scope)
    }

    /// Notes the visible scope `audience` searched with (see [`Self::knows`]).
    pub fn searched_with(&self, audience: &str, scope: &str) {
        let mut scopes = self.scopes.lock().unwrap_or_else(PoisonError::into_inner);
        if scopes.get(audience).is_none_or(|known| known != scope) {
            scopes.insert(audience.to_owned(), scope.to_owned());
        }
    }

    /// The newest entry for exactly this normalised question, version and
    /// scope.
    pub fn exact(&self, question: &str, version: i32, scope: &str) -> Option<Entry> {
        self.read()
            .iter()
            .filter(|entry| {
                entry.profile_version == version && entry.scope == scope && entry.question == question
            })
            .max_by_key(|entry| entry.created_at)
            .cloned()
    }

    /// The `limit` nearest entries of this version and scope, with their
    /// (cosine) similarity, most similar first.
    pub fn nearest(&self, vector: &[f32], version: i32, scope: &str, limit: usize) -> Vec<(Entry, f32)> {
        let entries = self.read();
        let mut scored: Vec<(usize, f32)> = entries
            .iter()
            .enumerate()
            .filter(|(_, entry)| entry.profile_version == version && entry.scope == scope)
            .map(|(i, entry)| (i, crate::embed::cosine(vector, &entry.vector)))
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        scored.into_iter().take(limit).map(|(i, similarity)| (entries[i].clone(), similarity)).collect()
    }

    /// Removes an entry: from lookups at once, from the table behind.
    pub async fn delete(&self, id: &str) -> Result<(), IndexError> {
        self.write().retain(|entry| entry.id != id);
        self.queue(Write::Delete(id.to_owned())).await
    }

    /// Drops every entry made before `before`: the pipeline passes the later
    /// of the active version's activation (no entry made before it can serve
    /// again, whatever its version) and the oldest age any source's
    /// volatility allows. Lookups refuse such entries anyway; this bounds
    /// what memory and the table keep. Returns how many went.
    pub async fn prune(&self, before: DateTime<Utc>) -> Result<usize, IndexError> {
        let mut dead = Vec::new();
        self.write().retain(|entry| {
            let live = entry.created_at >= before;
            if !live {
                dead.push(entry.id.clone());
            }
            live
        });
        let pruned = dead.len();
        if !dead.is_empty() {
            self.queue(Write::DeleteMany(dead)).await?;
        }
        Ok(pruned)
    }

    /// Waits until every insert and delete made so far is in the table.
    pub async fn flush(&self) -> Result<(), IndexError> {
        let (done, applied) = oneshot::channel();
        self.queue(Write::Flush(done)).await?;
        applied.await.map_err(|_| IndexError::Store("the answer cache's writer has stopped".into()))
    }

    /// How many entries the table holds, once the queued writes are in.
    pub async fn count(&self) -> Result<usize, IndexError> {
        self.flush().await?;
        self.table.count_rows(None).await.map_err(store_error)
    }

    /// A copy of every entry held in memory: the table's rows as read at
    /// open, and every write made since.
    pub fn entries(&self) -> Vec<Entry> {
        self.read().clone()
    }

    /// How many data fragments the table is stored in, once the queued
    /// writes are in: what the writer's compaction keeps down.
    pub async fn fragments(&self) -> Result<usize, IndexError> {
        self.flush().await?;
        let stats = self.table.stats().await.map_err(store_error)?;
        Ok(stats.fragment_stats.num_fragments)
    }
}

/// The task that owns the table: applies the cache's writes in order until
/// the cache is dropped. A write that fails is logged and skipped; memory
/// keeps serving, and the table catches up with the next writes.
struct Writer {
    table: Table,
    schema: SchemaRef,
    dimensions: usize,
    since_compaction: usize,
}

impl Writer {
    async fn run(mut self, mut queued: mpsc::Receiver<Write>) {
        while let Some(write) = queued.recv().await {
            let applied = match write {
                Write::Insert(entry) => self.append(&entry).await,
                Write::Delete(id) => {
                    self.table.delete(&format!("id = {}", quote(&id))).await.map(|_| ()).map_err(store_error)
                }
                Write::DeleteMany(ids) => self.delete_many(&ids).await,
                Write::Flush(done) => {
                    let _ = done.send(());
                    continue;
                }
            };
            if let Err(err) = applied {
                tracing::warn!(error = %err, "an answer cache write did not reach its table");
            }
            self.since_compaction += 1;
            if self.since_compaction >= COMPACT_EVERY {
                self.since_compaction = 0;
                if let Err(err) = self.table.optimize(OptimizeAction::All).await {
                    tracing::warn!(error = %err, "compacting the answer cache table failed");
                }
            }
        }
    }

    async fn delete_many(&self, ids: &[String]) -> Result<(), IndexError> {
        for some in ids.chunks(500) {
            let listed = some.iter().map(|id| quote(id)).collect::<Vec<_>>().join(", ");
            self.table.delete(&format!("id IN ({listed})")).await.map_err(store_error)?;
        }
        Ok(())
    }

    async fn append(&self, entry: &Entry) -> Result<(), IndexError> {
        let cited = serde_json::to_string(&entry.cited).map_err(store_error)?;
        let vectors = FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
            [Some(entry.vector.iter().copied().map(Some).collect::<Vec<_>>())],
            self.dimensions as i32,
        );
        let batch = RecordBatch::try_new(
            self.schema.clone(),
            vec![
                Arc::new(StringArray::from(vec![entry.id.clone()])),
                Arc::new(StringArray::from(vec![entry.question.clone()])),
                Arc::new(Int32Array::from(vec![entry.profile_version])),
                Arc::new(StringArray::from(vec![entry.scope.clone()])),
                Arc::new(Int64Array::from(vec![entry.created_at.timestamp_millis()])),
                Arc::new(BooleanArray::from(vec![entry.grounded])),
                Arc::new(StringArray::from(vec![entry.payload.to_string()])),
                Arc::new(StringArray::from(vec![cited])),
                Arc::new(vectors),
            ],
        )
        .map_err(store_error)?;
        let reader: Box<dyn RecordBatchReader + Send> =
            Box::new(RecordBatchIterator::new(vec![Ok(batch)], self.schema.clone()));
        self.table.add(reader).execute().await.map_err(store_error)?;
        Ok(())
    }
}

/// Whether every cited chunk is still stored with the hash it had.
pub fn citations_current(cited: &[CitedChunk], now_stored: &HashMap<String, String>) -> bool {
    cited.iter().all(|c| now_stored.get(&c.chunk_id) == Some(&c.content_hash))
}

fn entries_of(batch: &RecordBatch) -> Result<Vec<Entry>, IndexError> {
    let text = |name| column::<StringArray>(batch, name);
    let (id, question, payload, cited) = (text("id")?, text("question")?, text("payload")?, text("cited")?);
    let scope = text("scope")?;
    let version = column::<Int32Array>(batch, "profile_version")?;
    let created = column::<Int64Array>(batch, "created_at_ms")?;
    let grounded = column::<BooleanArray>(batch, "grounded")?;
    let vectors = column::<FixedSizeListArray>(batch, "vector")?;
    (0..batch.num_rows())
        .map(|i| {
            let vector = vectors.value(i);
            let vector = vector
                .as_any()
                .downcast_ref::<Float32Array>()
                .ok_or_else(|| IndexError::Store("cache vectors are not f32".into()))?
                .values()
                .to_vec();
            let entry = Entry {
                id: id.value(i).to_owned(),
                question: question.value(i).to_owned(),
                profile_version: version.value(i),
                scope: scope.value(i).to_owned(),
                created_at: DateTime::from_timestamp_millis(created.value(i)).unwrap_or_default(),
                grounded: grounded.value(i),
                payload: serde_json::from_str(payload.value(i)).map_err(store_error)?,
                cited: serde_json::from_str(cited.value(i)).map_err(store_error)?,
                vector,
            };
            Ok(entry)
        })
        .collect()
}
