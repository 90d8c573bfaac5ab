//! What is served over REST under `/data/`, as the edge's OpenAPI document
//! (`/data/openapi.json`, the tool server's `svc://openapi`) describes it.

use super::*;

/// A resource served over REST: its path, the verbs it implements and its
/// table (whose attributes are the record's schema).
#[derive(Clone, Debug)]
pub struct HttpExport {
    pub path: String,
    pub verbs: Vec<Verb>,
    pub table: Option<Table>,
}

/// Every resource exported over HTTP that implements a verb, in the
/// registry's order. Not narrowed per caller: every call's permissions are
/// checked when it runs.
pub async fn http_exports(lore: &Lore) -> Result<Vec<HttpExport>> {
    let mut exports = Vec::new();
    for entry in registry(lore).await?.entries() {
        if !entry.export_types.http {
            continue;
        }
        let verbs = entry.resource.verbs();
        if verbs.is_empty() {
            continue;
        }
        let table = entry.resource.table(lore).await?;
        exports.push(HttpExport { path: entry.path.clone(), verbs, table });
    }
    Ok(exports)
}
