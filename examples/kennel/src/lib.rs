//! An example Lore extension: a kennel whose one custom tool, `adopt_dog`,
//! lets a signed-in user adopt a dog (read `docs/extensions.md` first).
//!
//! It shows each part of the resource trait a custom tool uses:
//!
//! - the tool's declaration ([`Resource::tools`]: name, method,
//!   description, input schema), listed to every session of the tool
//!   server's application profile, anonymous ones included;
//! - its method ([`Resource::call_tool`]), which checks its caller itself and
//!   refuses an anonymous one, then reads and writes records through the
//!   [`Envelope`]: both writes (the dog, the adoption) in one transaction,
//!   so a failure of the second leaves the first undone;
//! - the allow predicates, which decide per record instead of the caller's
//!   role: anyone who may call the tool reads the dogs, and a user whose
//!   role may not write `kennel.dog` still adopts one, the kennel vouching
//!   for exactly that change and nothing else.
//!
//! The tables it uses (`kennel.dog`: `id`, `name`, `adopted_by`;
//! `kennel.adoption`: `id`, `dog`, `by`) are the application's, declared in
//! its schema file; [`install`] registers the resource.

use std::sync::Arc;

use async_trait::async_trait;
use engine::appdb::catalog::Table;
use engine::appdb::records::Record;
use engine::appdb::{AppDbError, Principal};
use engine::resources::{Allow, CustomTool, Envelope, ExportTypes, Resource, ToolOutput, Verb};
use engine::{Lore, Result};
use serde_json::{json, Value};

/// The database of the kennel's tables.
pub const DATABASE: &str = "kennel";

/// Where the resource is registered (no table is exported at it).
pub const PATH: &str = "kennel";

/// The kennel: no REST verbs, one custom tool.
pub struct Kennel;

/// Registers the kennel with `lore`'s resource registry, served to the tool
/// server only.
pub fn install(lore: &Lore) {
    lore.resources().set(PATH, Arc::new(Kennel), ExportTypes { http: false, mcp: true });
}

#[async_trait]
impl Resource for Kennel {
    fn verbs(&self) -> Vec<Verb> {
        Vec::new()
    }

    fn tools(&self) -> Vec<CustomTool> {
        vec![CustomTool {
            name: "adopt_dog".into(),
            method: "adopt".into(),
            description: "Adopts the dog with this id for the signed-in user.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {"id": {"type": "string", "description": "The dog's id."}},
                "required": ["id"],
            }),
        }]
    }

    async fn call_tool(&self, envelope: &mut Envelope<'_>, method: &str, args: Value) -> Result<ToolOutput> {
        if method != "adopt" {
            return Err(AppDbError::Invalid(format!("the kennel has no tool method `{method}`")).into());
        }
        // The tool server performs no check for a custom tool: this is it.
        let Some(Principal::User(user)) = envelope.user() else {
            return Err(AppDbError::denied("adopt", "a dog (sign in as a user)").into());
        };
        let username = user.username.clone();
        let id = args
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| AppDbError::MissingAttribute("id".into()))?
            .to_owned();
        let dog = envelope
            .get(DATABASE, "dog", &json!(id))
            .await?
            .ok_or_else(|| AppDbError::Invalid(format!("there is no dog `{id}`")))?;
        if dog.get("adopted_by").is_some_and(|by| !by.is_null()) {
            return Err(AppDbError::Invalid(format!("`{id}` is already adopted")).into());
        }
        let mut change = Record::new();
        change.insert("id".into(), json!(id));
        change.insert("adopted_by".into(), json!(username));
        envelope.update(DATABASE, "dog", change).await?;
        // The adoption's record shares the dog's id: adopting a dog a second
        // time through another path fails here, and the dog's change above
        // is rolled back with it.
        let mut adoption = Record::new();
        adoption.insert("id".into(), json!(id));
        adoption.insert("dog".into(), json!(id));
        adoption.insert("by".into(), json!(username));
        envelope.insert(DATABASE, "adoption", adoption).await?;
        Ok(ToolOutput::Json(json!({"adopted": id, "by": username})))
    }

    /// Every caller of the tool may see the dogs (the tool itself decides
    /// who may call it).
    fn allow_read(&self, _user: Option<&Principal>, table: &Table, _record: &Record) -> Allow {
        if table.database == DATABASE {
            Allow::Yes
        } else {
            Allow::AsRole
        }
    }

    /// A user may record an adoption in its own name, whatever its role.
    fn allow_insert(&self, user: Option<&Principal>, table: &Table, record: &Record) -> Allow {
        match user {
            Some(Principal::User(user))
                if table.database == DATABASE
                    && table.name == "adoption"
                    && record.get("by").and_then(Value::as_str) == Some(user.username.as_str()) =>
            {
                Allow::Yes
            }
            _ => Allow::AsRole,
        }
    }

    /// A user may set a dog's `adopted_by` to itself, and change nothing
    /// else of it, whatever its role.
    fn allow_update(&self, user: Option<&Principal>, table: &Table, changes: &Record) -> Allow {
        let only_adoption = changes.keys().all(|name| name == "id" || name == "adopted_by");
        match user {
            Some(Principal::User(user))
                if table.database == DATABASE
                    && table.name == "dog"
                    && only_adoption
                    && changes.get("adopted_by").and_then(Value::as_str) == Some(user.username.as_str()) =>
            {
                Allow::Yes
            }
            _ => Allow::AsRole,
        }
    }
}
