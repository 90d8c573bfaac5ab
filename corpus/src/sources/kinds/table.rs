//! The table kind: the rows of one table of Lore's application database,
//! a document each, re-synced on a schedule and after every write through
//! Lore. Reading the rows is [`crate::ingest::table`].

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::appdb::records::{ConditionArgs, Operator};
use crate::sources::audience::MirroredTable;
use crate::sources::connector::{Connector, Field, KindInfo, Run};
use crate::{Corpus, Result};

pub struct TableKind;

/// Configuration of a table source: which rows, and what makes a document
/// of one (see [`crate::ingest::table`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableConfig {
    #[serde(default = "default_database", alias = "schema")]
    pub database: String,
    pub table: String,
    /// The attribute whose value titles the row's document.
    pub title: String,
    /// The attributes whose values make its text, each a paragraph (or
    /// give `template`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub text: Vec<String>,
    /// Its text as a template over the attributes: `{name}`, and `{id}`
    /// for the primary key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// Where its citations link to, a template like `template` (values
    /// URL-encoded); without one, the row's REST URL when the table is
    /// exported over HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Only the rows that meet these (as `search_by_conditions` takes them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ConditionArgs>,
    #[serde(default)]
    pub operator: Operator,
}

fn default_database() -> String {
    crate::appdb::catalog::DEFAULT_DATABASE.to_owned()
}

pub const KEY: &str = "table";

const INFO: KindInfo = KindInfo {
    needs: "table, title and text (or template)",
    note: Some(
        "By default its rows answer only callers whose role may read the table, each with the attributes its role may read (a role that may read none of the text attributes reads nothing of it); keys without a user and the widget read none. Set its audience to `everyone` to publish those attributes to every caller on purpose.",
    ),
    resync_label: "Full re-sync",
    never_label: "Never on its own (writes through Lore still count at once)",
    fields: &[
        Field::text("database", "Database").required().default("data").advanced(),
        Field::text("table", "Table").required().placeholder("faq"),
        Field::text("title", "Title attribute").required().placeholder("question"),
        Field::list("text", "Text attributes").placeholder("answer, details"),
        Field::text("template", "Or a text template").placeholder("{question} {answer}").advanced(),
        Field::text("url", "Citation URL template").placeholder("https://example.com/faq/{id}").advanced(),
    ],
    ..KindInfo::new(KEY, "Table (rows of Lore's application database)").synced()
};

#[async_trait]
impl Connector for TableKind {
    type Config = TableConfig;

    fn info(&self) -> &'static KindInfo {
        &INFO
    }

    /// The table exists and has every attribute the configuration names.
    async fn check(&self, lore: &Corpus, config: &TableConfig) -> Result<()> {
        crate::ingest::table::validate(lore, config).await.map(|_| ())
    }

    async fn sync(&self, run: Run<'_>, config: &TableConfig) -> Result<()> {
        crate::ingest::table::sync(run.indexer, run.source, config, run.progress, run.cancel).await
    }

    /// The table, and every attribute a row's document is built from: its
    /// title, its text (attributes or the template's) and its citation URL.
    fn mirrored_table(&self, config: &TableConfig) -> Option<MirroredTable> {
        // Stored configurations were checked; a template that no longer
        // reads names nothing more.
        let named = |template: &Option<String>| -> Vec<String> {
            let names = template.as_deref().map(crate::ingest::table::placeholders);
            names.and_then(|read| read.ok()).unwrap_or_default().into_iter().filter(|n| n != "id").collect()
        };
        let mut text: Vec<String> = config.text.iter().cloned().chain(named(&config.template)).collect();
        text.sort();
        text.dedup();
        let mut attributes: Vec<String> =
            text.iter().cloned().chain([config.title.clone()]).chain(named(&config.url)).collect();
        attributes.sort();
        attributes.dedup();
        Some(MirroredTable {
            database: config.database.clone(),
            table: config.table.clone(),
            attributes,
            text,
        })
    }
}
