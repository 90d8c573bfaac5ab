//! A model provider account: an OpenAI-compatible endpoint and, for hosted
//! vendors, its API key (sealed with AES-256-GCM; see `engine::secrets`).

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "provider_account")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub name: String,
    /// A preset (`openai`, `groq`, `ollama`, `llama_cpp`, ...) or `custom`.
    pub kind: String,
    /// `on_node` or `off_node`.
    pub placement: String,
    /// The API base, for example `http://127.0.0.1:8080/v1`.
    pub endpoint: String,
    /// base64(nonce ‖ ciphertext) of the API key; never decrypted except to call.
    pub api_key_sealed: Option<String>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
