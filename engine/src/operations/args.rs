//! The arguments of each operation. Unknown fields are ignored, as HarperDB
//! does; `schema` is HarperDB's older name of `database`.

use super::*;

#[derive(Deserialize, schemars::JsonSchema)]
pub struct NoArgs {}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct DatabaseArgs {
    /// The database (`schema` also accepted); `data` when left out.
    #[serde(default, alias = "schema")]
    pub database: Option<String>,
}

macro_rules! database_or_default {
    ($($args:ty),*) => {$(
        impl $args {
            pub(super) fn database_or_default(&self) -> String {
                self.database.clone().unwrap_or_else(|| catalog::DEFAULT_DATABASE.to_owned())
            }
        }
    )*};
}

database_or_default!(
    DatabaseArgs,
    TableArgs,
    CreateTableArgs,
    AttributeArgs,
    WriteArgs,
    DeleteArgs,
    SearchByIdArgs,
    SearchByValueArgs,
    SearchByConditionsArgs
);

#[derive(Deserialize, schemars::JsonSchema)]
pub struct TableArgs {
    #[serde(default, alias = "schema")]
    pub database: Option<String>,
    pub table: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AttributeDeclaration {
    pub name: String,
    /// Int, Long, BigInt, Float, String, ID, Boolean, Date, Bytes, Blob, Object, Array.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub indexed: bool,
    #[serde(default)]
    pub nullable: Option<bool>,
    #[serde(default, alias = "isPrimaryKey")]
    pub is_primary_key: bool,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct CreateTableArgs {
    #[serde(default, alias = "schema")]
    pub database: Option<String>,
    pub table: String,
    /// The primary key's attribute (`hash_attribute` also accepted); `id` when left out.
    #[serde(default, alias = "hash_attribute")]
    pub primary_key: Option<String>,
    /// Typed attributes; a table without them takes attributes from the records it gets.
    #[serde(default)]
    pub attributes: Vec<AttributeDeclaration>,
}

impl CreateTableArgs {
    pub(super) fn into_new_table(self) -> Result<NewTable> {
        let database = self.database_or_default();
        let declared_key = self.attributes.iter().find(|a| a.is_primary_key).map(|a| a.name.clone());
        let primary_key = self.primary_key.or(declared_key).unwrap_or_else(|| "id".to_owned());
        let mut attributes = Vec::with_capacity(self.attributes.len());
        for declared in &self.attributes {
            let kind = match declared.kind.as_deref() {
                Some(kind) => AttrType::parse(kind)?,
                None => AttrType::Any,
            };
            attributes.push(Attribute {
                name: declared.name.clone(),
                kind,
                nullable: declared.nullable.unwrap_or(true),
                indexed: declared.indexed,
                managed: None,
                computed: None,
                shape: None,
            });
        }
        let origin = if attributes.is_empty() { Origin::Operation } else { Origin::Declared };
        Ok(NewTable {
            database,
            name: self.table,
            primary_key,
            attributes,
            origin,
            options: Default::default(),
        })
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AttributeArgs {
    #[serde(default, alias = "schema")]
    pub database: Option<String>,
    pub table: String,
    pub attribute: String,
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub indexed: bool,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct WriteArgs {
    #[serde(default, alias = "schema")]
    pub database: Option<String>,
    pub table: String,
    pub records: Vec<Value>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct DeleteArgs {
    #[serde(default, alias = "schema")]
    pub database: Option<String>,
    pub table: String,
    /// Primary keys (`hash_values` also accepted).
    #[serde(alias = "hash_values")]
    pub ids: Vec<Value>,
}

pub(super) fn all_attributes() -> Vec<String> {
    vec!["*".to_owned()]
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct SearchByIdArgs {
    #[serde(default, alias = "schema")]
    pub database: Option<String>,
    pub table: String,
    #[serde(alias = "hash_values")]
    pub ids: Vec<Value>,
    #[serde(default = "all_attributes")]
    pub get_attributes: Vec<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct SearchByValueArgs {
    #[serde(default, alias = "schema")]
    pub database: Option<String>,
    pub table: String,
    pub search_attribute: String,
    /// The value; in text, `*` is a wildcard.
    pub search_value: Value,
    #[serde(default = "all_attributes")]
    pub get_attributes: Vec<String>,
    #[serde(default)]
    pub limit: Option<u64>,
    #[serde(default)]
    pub offset: Option<u64>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct SearchByConditionsArgs {
    #[serde(default, alias = "schema")]
    pub database: Option<String>,
    pub table: String,
    #[serde(default)]
    pub operator: Operator,
    pub conditions: Vec<ConditionArgs>,
    #[serde(default = "all_attributes")]
    pub get_attributes: Vec<String>,
    #[serde(default)]
    pub limit: Option<u64>,
    #[serde(default)]
    pub offset: Option<u64>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AddUserArgs {
    pub username: String,
    /// The role's name (or id).
    pub role: String,
    #[serde(default)]
    pub active: Option<bool>,
    /// Accepted for HarperDB scripts and ignored: Lore users have no
    /// password (people sign in, programs use the user's keys).
    #[serde(default)]
    pub password: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AlterUserArgs {
    pub username: String,
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub active: Option<bool>,
    /// Ignored (see add_user).
    #[serde(default)]
    pub password: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct UserArgs {
    pub username: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AddRoleArgs {
    /// The role's name.
    pub role: String,
    /// The permission tree (super_user, structure_user, operations, per-database tables).
    pub permission: Value,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AlterRoleArgs {
    /// The role's id (or name).
    pub id: String,
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub permission: Option<Value>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct RoleArgs {
    /// The role's id (or name).
    pub id: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ReadAuditLogArgs {
    /// At most this many entries (100 by default, 1000 at most).
    #[serde(default)]
    pub limit: Option<u64>,
    /// Entries older than this entry id (for paging back).
    #[serde(default)]
    pub before: Option<i64>,
}

/// `set_configuration`'s arguments: every argument but `operation` is a
/// setting, named as in the configuration file with dots (`"answer.grounding_min_support": 0.6`).
#[derive(Deserialize, schemars::JsonSchema)]
pub struct SetConfigurationArgs {
    #[serde(flatten)]
    pub settings: Map<String, Value>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ReadLogArgs {
    /// At most this many lines (default 100).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Only lines at this level or more severe: `error`, `warn`, `info`, `debug`, `trace`.
    #[serde(default)]
    pub level: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AnalyticsArgs {
    /// The last this many hours (1 to 9600; default 24).
    #[serde(default)]
    pub hours: Option<i64>,
    /// Top questions and content gaps of one audience: `admin`,
    /// `everyone` or `role:NAME` (default: every caller's). A caller that
    /// is not a super user always gets its own audience's.
    #[serde(default)]
    pub audience: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AnswerArgs {
    /// The question, in the asker's words.
    pub question: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct SearchJobsArgs {
    /// Only this source's runs.
    #[serde(default)]
    pub source_id: Option<String>,
    /// At most this many (default 50, at most 500).
    #[serde(default)]
    pub limit: Option<u64>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AddSourceArgs {
    pub name: String,
    /// `website`, `upload` or `table`.
    pub kind: String,
    /// A website's `{"start_url", "discovery", "include", "exclude", "max_pages", "max_depth"}`;
    /// a table's `{"database", "table", "title", "text" or "template", "url", "conditions", "operator"}`.
    #[serde(default)]
    pub config: Option<Value>,
    /// `static`, `low`, `medium` or `high`.
    #[serde(default)]
    pub volatility: Option<String>,
    /// Who may read it through answers and retrieval (default: `everyone`,
    /// a table source's `table`).
    #[serde(default)]
    pub audience: Option<AudienceArg>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AlterSourceArgs {
    /// The source's id.
    pub id: String,
    /// Who may read it through answers and retrieval, from the next request.
    pub audience: AudienceArg,
}

/// `everyone`; `table` (the readers of a table source's table); or role
/// names, as a list or as one string separated by commas.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum AudienceArg {
    Named(String),
    Roles(Vec<String>),
}

impl AudienceArg {
    /// As `lore sources … --audience` and the console write it.
    pub fn written(self) -> String {
        match self {
            AudienceArg::Named(named) => named,
            AudienceArg::Roles(roles) => roles.join(","),
        }
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct StartIndexArgs {
    /// Re-embed everything instead of syncing what changed.
    #[serde(default)]
    pub full: bool,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct SyncSourceArgs {
    /// The source's id.
    pub id: String,
    /// Re-embed everything instead of syncing what changed.
    #[serde(default)]
    pub full: bool,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct JobArgs {
    pub id: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct RetrieveArgs {
    pub query: String,
    #[serde(default)]
    pub top_k: Option<usize>,
}
