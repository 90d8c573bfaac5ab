//! One file or page of a source, with what decides whether it changed.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "document")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub source_id: String,
    /// Identity within the source: the file name, or the page's canonical URL.
    pub uri: String,
    pub title: String,
    /// Where a citation links to (pages only).
    pub url: Option<String>,
    /// SHA-256 of the extracted text and the chunking that indexed it.
    pub content_hash: Option<String>,
    /// SHA-256 of the extracted text alone: another page with the same text
    /// is a duplicate.
    pub text_hash: Option<String>,
    /// HTTP validators of the last fetch.
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    /// The sitemap's `<lastmod>` at the last fetch.
    pub lastmod: Option<String>,
    pub chunk_count: i32,
    /// `indexed`, `failed`, `pending` or `quarantined` (a process died
    /// while reading it: skipped until its bytes change).
    pub status: String,
    pub error: Option<String>,
    /// SHA-256 of the bytes that were being read when a process died on
    /// this document; set only while it is quarantined.
    pub quarantined_hash: Option<String>,
    /// The job that last handled this document (a resumed job skips its own work).
    pub last_job_id: Option<String>,
    pub indexed_at: Option<DateTimeUtc>,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::source::Entity",
        from = "Column::SourceId",
        to = "super::source::Column::Id",
        on_delete = "Cascade"
    )]
    Source,
}

impl Related<super::source::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Source.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
