//! The table source: the rows of one application table as documents.
//!
//! Each row that meets the source's conditions is one document, identified
//! within the source by its primary key. Its title is one attribute, its
//! text is either a list of attributes (each a paragraph; a value that is
//! not text reads `name: value`) or a template over them (`{name}`, and
//! `{id}` for the primary key), and its citations link to the URL template
//! filled in the same way, or else to the row's REST URL when the table is
//! exported over HTTP.
//!
//! A run reads the keys of every row that meets the conditions, then the
//! rows to index: every one on a first or full run, or when the table has
//! no `@updatedTime` attribute (the content hash then decides what is
//! embedded again); otherwise only the rows written since the last run
//! that succeeded began, less [`CURSOR_MARGIN`] (a write stamped before it
//! committed, or by a process whose clock runs behind, is read again, and
//! its unchanged hash costs nothing). Documents whose row is gone, expired
//! or no longer meets the conditions are removed. Unchanged rows are never
//! embedded again.
//!
//! Under the `table` audience a row is one document for each view of the
//! source some role reads ([`crate::sources::audience::View`]): the whole
//! row, and the row with only the attributes a role may read, indexed apart
//! (its URI is the key and the view's id) so a role's search finds only its
//! own. A run builds the documents of the views roles need now and removes
//! those of views no role needs any more, like those of rows that are gone.
//!
//! A write to the table through any surface of this process (operations,
//! REST, the tool server) is noted ([`Writes`]), which wakes the indexing
//! worker: it queues a run of each enabled table source on it, so the
//! change is answerable within seconds. Every `lore serve` notes its own
//! writes, so replicas on one database follow each other's; changes by a
//! process that runs no worker (`lore schema apply`), and rows that expire,
//! are caught by the source's scheduled re-sync (its volatility).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use entity::{document, index_job, source};
use sea_orm::{ColumnTrait, Condition, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use serde_json::Value;

use super::jobs::{self, ProgressHandle};
use super::{Fetched, Indexer, IngestError};
use crate::appdb::catalog::{self, Managed, Table};
use crate::appdb::permission::Permission;
use crate::appdb::records::{self, Criterion, Search, SearchType};
use crate::extract::Extracted;
use crate::sources::audience::{self, View};
use crate::sources::kinds::table::{TableConfig, KEY};
use crate::sources::Source;
use crate::{Corpus, Result};

/// How far before the last successful run's start the next run reads
/// changed rows again.
pub const CURSOR_MARGIN: chrono::Duration = chrono::Duration::seconds(60);

/// How many rows are read, and indexed, at once: one embedding call and
/// one write of the chunk store for the lot.
const BATCH: usize = 200;

/// What [`Writes::note_named`] takes for every table of a database.
pub const EVERY_TABLE: &str = "*";

/// The tables written by this process since the indexing worker last
/// looked, as `(database, table)`.
#[derive(Debug, Default)]
pub struct Writes {
    tables: Mutex<BTreeSet<(String, String)>>,
    /// Wakes the indexing worker when a write is noted, rather than at its
    /// next round.
    noted: tokio::sync::Notify,
}

impl Writes {
    /// Notes a committed write to `table`.
    pub fn note(&self, table: &Table) {
        self.note_named(&table.database, &table.name);
    }

    /// Notes a committed change to table `table` of `database` by name: a
    /// dropped table or attribute (its sources then find what is gone), or
    /// with [`EVERY_TABLE`], every table of a dropped database.
    pub fn note_named(&self, database: &str, table: &str) {
        if self.lock().insert((database.to_owned(), table.to_owned())) {
            self.noted.notify_one();
        }
    }

    /// Returns once a write is noted (at once if one was noted since the
    /// last return).
    pub async fn wait(&self) {
        self.noted.notified().await;
    }

    fn take(&self) -> BTreeSet<(String, String)> {
        std::mem::take(&mut *self.lock())
    }

    fn put_back(&self, tables: BTreeSet<(String, String)>) {
        self.lock().extend(tables);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<(String, String)>> {
        // A set of names: nothing a panicking holder left can be half-made.
        self.tables.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Queues a run of every enabled table source on a table written since the
/// last call. Returns how many were queued.
/// One source that cannot be read or queued is logged and skipped; when
/// the sources cannot be listed at all, the notes are kept for the next round.
pub async fn schedule_written(lore: &Corpus) -> Result<usize> {
    let written = lore.table_writes().take();
    if written.is_empty() {
        return Ok(0);
    }
    let listed = source::Entity::find()
        .filter(source::Column::Kind.eq(KEY))
        .filter(source::Column::Enabled.eq(true))
        .all(&lore.db)
        .await;
    let candidates = match listed {
        Ok(candidates) => candidates,
        Err(err) => {
            lore.table_writes().put_back(written);
            return Err(err.into());
        }
    };
    let mut queued = 0;
    for row in candidates {
        let id = row.id.clone();
        let found = match Source::decode(row) {
            Ok(found) => found,
            Err(err) => {
                tracing::warn!(source = %id, error = %err, "a table source cannot be read; its writes wait for a sync");
                continue;
            }
        };
        let Some(config) = found.config.get::<TableConfig>() else { continue };
        let database = config.database.clone();
        if written.contains(&(database.clone(), config.table.clone()))
            || written.contains(&(database, EVERY_TABLE.to_owned()))
        {
            match jobs::enqueue(lore, Some(&found.id), false, "write").await {
                Ok(_) => queued += 1,
                // Disabled since it was listed, for one: it is synced when enabled.
                Err(err) => {
                    tracing::warn!(source = %id, error = %err, "a write did not queue the table source's run")
                }
            }
        }
    }
    Ok(queued)
}

/// Checks a table source's configuration against the catalog: the table
/// exists, every attribute it names does, the templates name only those
/// (or `id`), and the conditions can be searched with. Returns the table.
pub async fn validate(lore: &Corpus, config: &TableConfig) -> Result<Table> {
    if config.database == crate::appdb::system::DATABASE {
        return Err(IngestError::InvalidSource(format!(
            "`{}` holds Lore's own records, not content: a table source reads an application database",
            config.database
        ))
        .into());
    }
    let table = catalog::find_table(&lore.db, &config.database, &config.table).await?.ok_or_else(|| {
        IngestError::InvalidSource(format!(
            "there is no table `{}.{}`; create it first, or name an existing one",
            config.database, config.table
        ))
    })?;
    let known = |name: &str| table.attribute(name).is_some();
    let unknown = |what: &str, name: &str| {
        IngestError::InvalidSource(format!(
            "{what} names `{name}`, but table `{}` has no such attribute",
            table.path()
        ))
    };
    if !known(&config.title) {
        return Err(unknown("`title`", &config.title).into());
    }
    match (config.text.is_empty(), &config.template) {
        (true, None) => {
            return Err(IngestError::InvalidSource(
                "a table source needs its text: `text` (attributes) or `template`".into(),
            )
            .into())
        }
        (false, Some(_)) => {
            return Err(IngestError::InvalidSource("give `text` or `template`, not both".into()).into())
        }
        _ => {}
    }
    for name in &config.text {
        if !known(name) {
            return Err(unknown("`text`", name).into());
        }
    }
    for (what, template) in [("`template`", &config.template), ("`url`", &config.url)] {
        let Some(template) = template else { continue };
        for name in
            placeholders(template).map_err(|why| IngestError::InvalidSource(format!("{what}: {why}")))?
        {
            if name != "id" && !known(&name) {
                return Err(unknown(what, &name).into());
            }
        }
    }
    // The conditions are checked as the search that runs them checks them
    // (attributes, types, computed ones refused).
    let probe = Search { limit: Some(1), ..search_of(config, &table) };
    match records::search(&lore.db, &Permission::super_user(), &table, &probe).await {
        Ok(_) => {}
        Err(crate::Error::AppDb(refused)) => {
            return Err(IngestError::InvalidSource(format!("`conditions`: {refused}")).into())
        }
        Err(other) => return Err(other),
    }
    Ok(table)
}

/// The `{name}`s of a template, in order. A `{` without its `}`, an empty
/// or nested name, or a stray `}` is an error.
pub fn placeholders(template: &str) -> std::result::Result<Vec<String>, String> {
    let mut names = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find(['{', '}']) {
        if rest[open..].starts_with('}') {
            return Err("a `}` without its `{`".into());
        }
        let after = &rest[open + 1..];
        let close = after.find('}').ok_or("a `{` without its `}`")?;
        let name = after[..close].trim();
        if name.is_empty() || name.contains('{') {
            return Err(format!("`{{{}}}` is not an attribute's name", &after[..close]));
        }
        names.push(name.to_owned());
        rest = &after[close + 1..];
    }
    Ok(names)
}

/// Fills a template's `{name}`s from `row` (`{id}`: the primary key, unless
/// the table has an attribute called `id`); `encode` applies to each value.
fn fill(template: &str, row: &records::Record, key: &Value, encode: impl Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            out.push_str(&rest[open..]);
            return out;
        };
        let name = after[..close].trim();
        let value = row.get(name).or_else(|| (name == "id").then_some(key));
        out.push_str(&encode(&value.map(text_of).unwrap_or_default()));
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}

/// A value as text: a string as it is, anything else as JSON.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The search that selects the source's rows, for every attribute.
fn search_of(config: &TableConfig, table: &Table) -> Search {
    Search {
        conditions: config.conditions.iter().cloned().map(Criterion::from).collect(),
        operator: config.operator,
        get_attributes: vec![table.primary_key.clone()],
        limit: None,
        offset: None,
    }
}

/// The keys of the rows a search selects, in key order.
async fn keys(lore: &Corpus, table: &Table, search: &Search) -> Result<Vec<Value>> {
    let rows = records::search(&lore.db, &Permission::super_user(), table, search).await?;
    Ok(rows.into_iter().filter_map(|mut row| row.remove(&table.primary_key)).collect())
}

/// The document identity of a row: its key as text.
pub fn uri_of(key: &Value) -> String {
    text_of(key)
}

/// The document identity of a row in `view`: its key, and the view's id
/// unless the view is the whole source.
fn view_uri(key: &Value, view: &View) -> String {
    match view.id() {
        None => uri_of(key),
        Some(id) => format!("{}#{id}", uri_of(key)),
    }
}

/// Where a citation of the row links to: the URL template (when `view`
/// holds every attribute it names), else the row's REST URL when the table
/// is served over HTTP, else nowhere.
fn url_of(
    lore: &Corpus,
    config: &TableConfig,
    table: &Table,
    row: &records::Record,
    key: &Value,
    view: &View,
) -> Option<String> {
    let readable = |template: &String| {
        placeholders(template).is_ok_and(|names| names.iter().all(|n| n == "id" || view.holds(n)))
    };
    if let Some(template) = config.url.as_ref().filter(|template| readable(template)) {
        let encode = |value: &str| url::form_urlencoded::byte_serialize(value.as_bytes()).collect::<String>();
        return Some(fill(template, row, key, encode));
    }
    let export = table.options.export.as_ref().filter(|export| export.http)?;
    let mut url = url::Url::parse(&format!("{}/data/", lore.settings.base_url())).ok()?;
    url.path_segments_mut().ok()?.pop_if_empty().extend(export.path.split('/')).push(&text_of(key));
    Some(url.to_string())
}

/// A row as the document the indexer takes, in `view`: an attribute the
/// view does not hold reads as absent (a hidden title gives the table's
/// name and the key).
fn document_of(config: &TableConfig, row: &records::Record, key: &Value, view: &View) -> Extracted {
    let held: records::Record;
    let row = if view.whole {
        row
    } else {
        held = row.iter().filter(|(name, _)| view.holds(name)).map(|(n, v)| (n.clone(), v.clone())).collect();
        &held
    };
    let title = row.get(&config.title).map(text_of).filter(|t| !t.trim().is_empty());
    let text = match &config.template {
        Some(template) => fill(template, row, key, str::to_owned),
        None => config
            .text
            .iter()
            .filter_map(|name| match row.get(name) {
                None | Some(Value::Null) => None,
                Some(Value::String(text)) => Some(text.clone()),
                Some(other) => Some(format!("{name}: {other}")),
            })
            .collect::<Vec<_>>()
            .join("\n\n"),
    };
    Extracted {
        title: Some(title.unwrap_or_else(|| format!("{} {}", config.table, text_of(key)))),
        canonical_url: None,
        sections: vec![crate::extract::Section { heading: None, text }],
    }
}

/// When the last run that synced this source successfully began: rows
/// written since then (less the margin) are the ones to read again.
async fn cursor(lore: &Corpus, source_id: &str, this_job: &str) -> Result<Option<DateTime<Utc>>> {
    let last = index_job::Entity::find()
        .filter(index_job::Column::Status.eq(jobs::SUCCEEDED))
        .filter(index_job::Column::Id.ne(this_job))
        .filter(
            Condition::any()
                .add(index_job::Column::SourceId.eq(source_id))
                .add(index_job::Column::SourceId.is_null()),
        )
        .order_by_desc(index_job::Column::StartedAt)
        .one(&lore.db)
        .await?;
    Ok(last.and_then(|job| job.started_at).map(|at| at - CURSOR_MARGIN))
}

/// Syncs a table source (see the module documentation).
pub async fn sync(
    indexer: &Indexer,
    found: &Source,
    config: &TableConfig,
    progress: &ProgressHandle,
    cancel: tokio::sync::watch::Receiver<bool>,
) -> Result<()> {
    let lore = &indexer.lore;
    // The documents first, then the rows: a document another run makes in
    // between is then not taken for one whose row is gone.
    let known = known_documents(lore, &found.id).await?;
    let table = match validate(lore, config).await {
        Ok(table) => table,
        // The table, or an attribute the source reads, was dropped since:
        // what was indexed from it must not stay answerable. The run fails
        // with the reason, so the admin mends or deletes the source.
        Err(crate::Error::Ingest(IngestError::InvalidSource(why))) => {
            let removed =
                indexer.remove_document_ids(known.into_values().map(|doc| doc.id).collect()).await?;
            progress.add(|p| p.removed += removed);
            return Err(IngestError::InvalidSource(format!(
                "{why}; the {removed} documents indexed from it were removed"
            ))
            .into());
        }
        Err(other) => return Err(other),
    };
    let views = audience::views(lore, found).await?;
    let selected = search_of(config, &table);
    let live = keys(lore, &table, &selected).await?;
    let updated = table.attributes.iter().find(|a| a.managed == Some(Managed::UpdatedTime));
    let since = match updated {
        Some(_) if !indexer.full && known.values().any(|doc| doc.settled) => {
            cursor(lore, &found.id, &indexer.job_id).await?
        }
        _ => None,
    };
    let to_read: Vec<Value> = match (since, updated) {
        (Some(since), Some(updated)) => {
            let changed = Search {
                conditions: vec![Criterion {
                    attribute: updated.name.clone(),
                    search_type: SearchType::GreaterThanEqual,
                    value: catalog::time_json(updated, since),
                }],
                get_attributes: vec![table.primary_key.clone()],
                ..Search::default()
            };
            let changed: HashSet<String> = keys(lore, &table, &changed).await?.iter().map(uri_of).collect();
            // Rows written since, and any row without an indexed document
            // of every view (a run that stopped before reaching it, or
            // failed on it, or a view a role now needs).
            live.iter()
                .filter(|key| {
                    changed.contains(&uri_of(key))
                        || views
                            .iter()
                            .any(|view| !known.get(&view_uri(key, view)).is_some_and(|doc| doc.settled))
                })
                .cloned()
                .collect()
        }
        _ => live.clone(),
    };
    progress.add(|p| p.discovered += (to_read.len() * views.len()) as u64);

    for batch in to_read.chunks(BATCH) {
        if *cancel.borrow() {
            return Ok(());
        }
        let rows =
            records::by_ids(&lore.db, &Permission::super_user(), &table, batch, &["*".to_owned()]).await?;
        progress.add(|p| p.fetched += (rows.len() * views.len()) as u64);
        let table = &table;
        let documents: Vec<(Fetched, Extracted)> = rows
            .iter()
            .filter_map(|row| Some((row, row.get(&table.primary_key)?)))
            .flat_map(|(row, key)| {
                views.iter().map(move |view| {
                    let fetched = Fetched {
                        uri: view_uri(key, view),
                        url: url_of(lore, config, table, row, key, view),
                        content_type: Some("text/plain".into()),
                        view: view.id(),
                        ..Fetched::default()
                    };
                    (fetched, document_of(config, row, key, view))
                })
            })
            .collect();
        progress.add(|p| p.extracted += documents.len() as u64);
        indexer.index_batch(&found.id, &documents, progress).await?;
    }

    // Documents whose row is gone, expired or no longer selected, and
    // those of views no role reads any more.
    let present: HashSet<String> =
        live.iter().flat_map(|key| views.iter().map(move |view| view_uri(key, view))).collect();
    let gone: Vec<String> =
        known.into_iter().filter(|(uri, _)| !present.contains(uri)).map(|(_, doc)| doc.id).collect();
    let removed = indexer.remove_document_ids(gone).await?;
    progress.add(|p| p.removed += removed);
    Ok(())
}

/// What a run needs of a document it already has.
struct Known {
    id: String,
    /// Indexed without error: a document that failed (its row could not be
    /// embedded, say) is read again by every run until it is indexed,
    /// whenever its row was written.
    settled: bool,
}

/// The source's documents by URI: only the columns a run compares, since
/// a large table's run reads every one.
async fn known_documents(lore: &Corpus, source_id: &str) -> Result<HashMap<String, Known>> {
    let rows: Vec<(String, String, String, Option<String>)> = document::Entity::find()
        .select_only()
        .columns([
            document::Column::Id,
            document::Column::Uri,
            document::Column::Status,
            document::Column::Error,
        ])
        .filter(document::Column::SourceId.eq(source_id))
        .into_tuple()
        .all(&lore.db)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(id, uri, status, error)| (uri, Known { id, settled: status == "indexed" && error.is_none() }))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_noted_write_wakes_the_worker_once_until_its_table_is_taken() {
        let writes = Writes::default();
        let woken = |within| tokio::time::timeout(std::time::Duration::from_millis(within), writes.wait());
        assert!(woken(100).await.is_err(), "nothing noted, nothing wakes");
        writes.note_named("data", "dog");
        assert!(woken(1_000).await.is_ok(), "a write wakes the waiting worker");
        writes.note_named("data", "dog");
        assert!(woken(100).await.is_err(), "the table is noted already: no second wake");
        assert_eq!(writes.take().len(), 1);
        writes.note_named("data", "dog");
        assert!(woken(1_000).await.is_ok(), "once taken, the next write wakes it again");
    }

    #[test]
    fn placeholders_are_read_and_bad_braces_refused() {
        assert_eq!(placeholders("{name} lives in {city}.").unwrap(), vec!["name", "city"]);
        assert_eq!(placeholders("no names").unwrap(), Vec::<String>::new());
        assert!(placeholders("{name").is_err());
        assert!(placeholders("name}").is_err());
        assert!(placeholders("{}").is_err());
        assert!(placeholders("{a{b}}").is_err());
    }

    #[test]
    fn a_row_fills_its_templates_and_becomes_a_document() {
        let row: records::Record = serde_json::from_value(
            serde_json::json!({"id": 7, "name": "Harper", "age": 4, "bio": "Likes naps."}),
        )
        .unwrap();
        let key = serde_json::json!(7);
        assert_eq!(fill("{name} is {age} ({id})", &row, &key, str::to_owned), "Harper is 4 (7)");
        let config = TableConfig {
            database: "data".into(),
            table: "dog".into(),
            title: "name".into(),
            text: vec!["bio".into(), "age".into(), "missing".into()],
            template: None,
            url: None,
            conditions: Vec::new(),
            operator: Default::default(),
        };
        let whole = View {
            attributes: vec!["age".into(), "bio".into(), "missing".into(), "name".into()],
            whole: true,
        };
        let document = document_of(&config, &row, &key, &whole);
        assert_eq!(document.title.as_deref(), Some("Harper"));
        assert_eq!(document.sections[0].text, "Likes naps.\n\nage: 4");
        // A view without the title and the age reads them as absent.
        let view = View { attributes: vec!["bio".into(), "missing".into()], whole: false };
        let document = document_of(&config, &row, &key, &view);
        assert_eq!(document.title.as_deref(), Some("dog 7"));
        assert_eq!(document.sections[0].text, "Likes naps.");
    }
}
