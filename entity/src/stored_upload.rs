//! The bytes of a file uploaded to an upload source, kept in the shared
//! database so that every replica can index it. One row per document.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "stored_upload")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub document_id: String,
    pub source_id: String,
    pub content_type: Option<String>,
    pub size: i64,
    pub bytes: Vec<u8>,
    pub stored_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
