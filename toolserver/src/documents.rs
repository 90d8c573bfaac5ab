//! The tool server's own documents (`svc://about`, `svc://operations`,
//! `svc://openapi` and the template `svc://schema/{database}/{table}`, with
//! one concrete schema resource per table the caller may see),
//! served by one resource of the registry like any other resource's
//! documents: `resources/list` and `resources/read` find them through
//! [`engine::resources::Resource::documents`], not by name.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{about, operation_tools, permission_of, schema};
use engine::appdb::catalog;
use engine::appdb::AppDbError;
use engine::resources::{self, Caller, Document, ExportTypes, Instance, Profile, Registry, Resource, Verb};
use engine::Lore;
use engine::Result;

/// Where it is registered: not a path a table can be exported at (an export
/// name has no `:`), so no schema file can take its place.
pub const PATH: &str = "svc:";

const ABOUT: Document = Document {
    uri: "svc://about",
    name: "about",
    description: "This tool server: version, profile, protocol revisions, capabilities.",
    profiles: &[Profile::Application, Profile::Operations],
};

const OPERATIONS: Document = Document {
    uri: "svc://operations",
    name: "operations",
    description: "The operations you may call.",
    profiles: &[Profile::Operations],
};

const OPENAPI: Document = Document {
    uri: "svc://openapi",
    name: "openapi",
    description: "The OpenAPI 3.0.3 document of the REST surface under /data/.",
    profiles: &[Profile::Application],
};

const SCHEMA: Document = Document {
    uri: "svc://schema/{database}/{table}",
    name: "schema",
    description: "A table's attributes as you may see them.",
    profiles: &[Profile::Application],
};

/// The tool server's documents, as a resource.
pub struct ServerDocuments;

/// Registers [`ServerDocuments`]; called by [`crate::ToolServer::open`].
pub fn install(registry: &Registry) {
    registry.set(PATH, Arc::new(ServerDocuments), ExportTypes { http: false, mcp: true });
}

#[async_trait]
impl Resource for ServerDocuments {
    fn verbs(&self) -> Vec<Verb> {
        Vec::new()
    }

    fn documents(&self) -> &'static [Document] {
        &[ABOUT, OPERATIONS, OPENAPI, SCHEMA]
    }

    /// `svc://schema/{database}/{table}` of every table the caller may
    /// read or describe, which is what reading one admits.
    async fn instances(
        &self,
        lore: &Lore,
        _profile: Profile,
        caller: &Caller,
        document: &Document,
    ) -> Result<Vec<Instance>> {
        if *document != SCHEMA {
            return Ok(Vec::new());
        }
        let permission = permission_of(caller);
        Ok(catalog::tables(&lore.db, None)
            .await?
            .into_iter()
            .filter(|table| permission.sees_table(&table.database, &table.name))
            .map(|table| Instance {
                uri: format!("svc://schema/{}/{}", table.database, table.name),
                name: format!("schema/{}/{}", table.database, table.name),
                description: format!("The attributes of table {} as you may see them.", table.path()),
            })
            .collect())
    }

    /// A table's schema is refused (permission denied) when the caller may
    /// neither read nor describe it (SPEC, Errors 1); one that does not
    /// exist is not found.
    async fn read_document(
        &self,
        lore: &Lore,
        profile: Profile,
        caller: &Caller,
        document: &Document,
        uri: &str,
    ) -> Result<Value> {
        let permission = permission_of(caller);
        let not_found = || engine::Error::from(AppDbError::UnknownResource(uri.to_owned()));
        if *document == ABOUT {
            Ok(about(profile))
        } else if *document == OPERATIONS {
            let names: Vec<String> = operation_tools(lore, &permission).into_iter().map(|t| t.name).collect();
            Ok(json!({"operations": names}))
        } else if *document == OPENAPI {
            Ok(lore_openapi::data_document(&resources::http_exports(lore).await?, &lore.settings.base_url()))
        } else if *document == SCHEMA {
            let rest = uri.strip_prefix("svc://schema/").ok_or_else(not_found)?;
            let (database, table) = rest.split_once('/').ok_or_else(not_found)?;
            let table = match lore.appdb_cache().table(&lore.db, database, table).await {
                Ok(table) => table,
                Err(engine::Error::AppDb(AppDbError::UnknownDatabase(_) | AppDbError::UnknownTable(_))) => {
                    return Err(not_found())
                }
                Err(other) => return Err(other),
            };
            if !permission.sees_table(&table.database, &table.name) {
                return Err(AppDbError::denied("describe", table.path()).into());
            }
            Ok(schema::table_document(&table, &permission))
        } else {
            Err(not_found())
        }
    }
}
