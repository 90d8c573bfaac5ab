//! `svc://` resources: reading one, the URI of a record, and who may
//! subscribe to what.

use super::*;

/// What `resources/read` returns: the URI and its JSON.
#[derive(Clone, Debug, PartialEq)]
pub struct Read {
    pub uri: String,
    pub json: Value,
}

/// Reads resource `uri` of `profile` for `caller`: a document of a
/// registered resource (the tool server's own among them, see
/// [`super::documents`]), else on the application profile the descriptor
/// of an exported resource.
pub async fn read(lore: &Lore, profile: Profile, caller: &Caller, uri: &str) -> Result<Read> {
    let not_found = || engine::Error::from(AppDbError::UnknownResource(uri.to_owned()));
    if caller.principal.is_none() {
        // An anonymous session lists no resource, so reads none.
        return Err(not_found());
    }
    for entry in resources::registry(lore).await?.entries() {
        if !entry.export_types.mcp {
            continue;
        }
        let documents = entry.resource.documents();
        if let Some(document) = documents.iter().find(|d| d.profiles.contains(&profile) && d.matches(uri)) {
            let json = entry.resource.read_document(lore, profile, caller, document, uri).await?;
            return Ok(Read { uri: uri.to_owned(), json });
        }
    }
    if profile != Profile::Application {
        return Err(not_found());
    }
    let permission = permission_of(caller);
    let path = uri.strip_prefix(&format!("{}/data/", lore.settings.base_url())).ok_or_else(not_found)?;
    let exported = exported(lore).await?;
    let tool = names_of(&exported).get(path).cloned().ok_or_else(not_found)?;
    let (entry, table) = exported.into_iter().find(|(e, _)| e.path == path).ok_or_else(not_found)?;
    if !described(&entry, table.as_ref(), &permission) {
        return Err(not_found());
    }
    let json = json!({
        "uri": uri,
        "path": entry.path,
        "database": table.as_ref().map(|t| t.database.clone()).unwrap_or_default(),
        "table": table.as_ref().map(|t| t.name.clone()).unwrap_or_default(),
        "hint": format!("Use the get_{tool} tool for one record by primary key and search_{tool} to find records; this descriptor holds no records."),
    });
    Ok(Read { uri: uri.to_owned(), json })
}

/// The URI of one record of an exported table: what `resources/subscribe`
/// takes (`{base_url}/data/<path>/<id>`).
pub fn record_uri(base_url: &str, path: &str, id: &Value) -> String {
    let id = match id {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    format!("{base_url}/data/{path}/{id}")
}

/// Checks that `uri` is a record of a table exported to this profile that
/// the caller may read: only row-backed resources take subscriptions.
pub async fn subscribable(lore: &Lore, profile: Profile, caller: &Caller, uri: &str) -> Result<()> {
    let refused = || {
        engine::Error::from(AppDbError::Invalid(format!(
            "`{uri}` is not a record of an exported table (`{}/data/<path>/<id>`)",
            lore.settings.base_url()
        )))
    };
    if profile != Profile::Application {
        return Err(refused());
    }
    let rest = uri.strip_prefix(&format!("{}/data/", lore.settings.base_url())).ok_or_else(refused)?;
    let (path, _id) = rest.rsplit_once('/').filter(|(_, id)| !id.is_empty()).ok_or_else(refused)?;
    let entry =
        resources::registry(lore).await?.entry(path).filter(|e| e.export_types.mcp).ok_or_else(refused)?;
    let table = entry.resource.table(lore).await?.ok_or_else(refused)?;
    let permission = permission_of(caller);
    if !permission.sees_table(&table.database, &table.name) {
        // Nothing of a table the caller may not see, not even its name.
        return Err(refused());
    }
    if !permission.may(&table.database, &table.name, Access::Read) {
        return Err(AppDbError::denied("read", table.path()).into());
    }
    Ok(())
}
