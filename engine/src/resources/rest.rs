//! REST under `/data/`: a path and query resolved to a resource and a verb,
//! and the writes a table source hears about.

use super::*;

/// After a write to `table` committed (every surface's writes come
/// here): the table sources on it are noted for re-indexing, and the push
/// channels subscribed to these records are told.
pub(crate) fn written(lore: &Lore, table: &Table, ids: &[Value]) {
    if !ids.is_empty() {
        lore.table_writes().note(table);
    }
    crate::mcp::records_changed(lore, table, ids);
}

/// A REST call under `/data/`: the method, the path after `/data/`, the
/// query string's pairs and the JSON body.
#[derive(Clone, Debug)]
pub struct RestRequest {
    pub method: RestMethod,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub body: Option<Value>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestMethod {
    Get,
    Post,
    Put,
    Patch,
    Delete,
}

/// What a REST call returned.
#[derive(Debug)]
pub enum RestOutcome {
    Record(Record),
    Page(Page),
    /// A record was created with this primary key.
    Created(Value),
    /// Written or deleted; nothing to return.
    Done,
}

/// Runs one REST call (see `docs/operations.md`, "REST"): `<path>/` is the
/// collection (search, create), `<path>/<id>` one record.
pub async fn rest(lore: &Lore, caller: &Caller, request: RestRequest) -> Result<RestOutcome> {
    let (entry, id) = route(lore, &request.path).await?;
    let resource = &entry.resource;
    let verb = match (request.method, id.is_some()) {
        (RestMethod::Get, false) => Verb::Search,
        (RestMethod::Get, true) => Verb::Get,
        (RestMethod::Post, false) => Verb::Post,
        (RestMethod::Put, true) => Verb::Put,
        (RestMethod::Patch, true) => Verb::Patch,
        (RestMethod::Delete, true) => Verb::Delete,
        (method, _) => {
            return Err(AppDbError::Invalid(format!(
                "{method:?} is not served at `/data/{}`: GET and POST at `<path>/`, GET, PUT, PATCH and DELETE at `<path>/<id>`",
                request.path
            ))
            .into())
        }
    };
    if !resource.verbs().contains(&verb) {
        return Err(unsupported(verb));
    }
    let table = resource.table(lore).await?;
    let id = id.map(|raw| key_from_path(table.as_ref(), &raw));
    let mut select = Vec::new();
    let mut query = Query::default();
    for (name, value) in &request.query {
        match name.as_str() {
            "select" => {
                select.extend(value.split(',').map(str::trim).filter(|a| !a.is_empty()).map(str::to_owned))
            }
            "limit" => {
                let limit =
                    value.parse::<u64>().ok().filter(|n| (1..=MAX_PAGE).contains(n)).ok_or_else(|| {
                        AppDbError::Invalid(format!("`limit` must be a whole number from 1 to {MAX_PAGE}"))
                    })?;
                query.limit = Some(limit);
            }
            "cursor" => query.cursor = Some(value.clone()),
            attribute => {
                let declared = table.as_ref().and_then(|t| t.attribute(attribute));
                query.conditions.push(condition(attribute, declared, value));
            }
        }
    }
    query.select = select;
    let body = || -> Result<Record> {
        match request.body.clone() {
            Some(Value::Object(record)) => Ok(record),
            _ => Err(AppDbError::Invalid("the body must be a JSON object (the record)".into()).into()),
        }
    };
    let missing = |id: &Value| -> crate::Error {
        AppDbError::UnknownRecord(format!("{id} in `{}`", entry.path)).into()
    };
    match (verb, id) {
        (Verb::Search, _) => Ok(RestOutcome::Page(resource.search(lore, caller, &query).await?)),
        (Verb::Post, _) => Ok(RestOutcome::Created(resource.post(lore, caller, body()?).await?)),
        (Verb::Get, Some(id)) => match resource.get(lore, caller, &id, &query.select).await? {
            Some(record) => Ok(RestOutcome::Record(record)),
            None => Err(missing(&id)),
        },
        (Verb::Put, Some(id)) => {
            resource.put(lore, caller, &id, body()?).await?;
            Ok(RestOutcome::Done)
        }
        (Verb::Patch, Some(id)) => match resource.patch(lore, caller, &id, body()?).await? {
            true => Ok(RestOutcome::Done),
            false => Err(missing(&id)),
        },
        (Verb::Delete, Some(id)) => match resource.delete(lore, caller, &id).await? {
            true => Ok(RestOutcome::Done),
            false => Err(missing(&id)),
        },
        (verb, None) => Err(unsupported(verb)),
    }
}

/// The resource a REST path names, and the record's id if it names one:
/// the whole path when a resource is exported there (its collection), else
/// the path up to the last `/` and the id after it.
pub(super) async fn route(lore: &Lore, path: &str) -> Result<(Entry, Option<String>)> {
    let trimmed = path.trim_end_matches('/');
    if let Ok(entry) = http_resource(lore, trimmed).await {
        return Ok((entry, None));
    }
    match trimmed.rsplit_once('/') {
        Some((resource, id)) if !id.is_empty() => {
            Ok((http_resource(lore, resource).await?, Some(id.to_owned())))
        }
        _ => Err(AppDbError::UnknownResource(trimmed.to_owned()).into()),
    }
}

/// A condition of the query string: `attribute=value` is equality;
/// `attribute=gt=5` (also `ge`, `lt`, `le`, `ne`, `sw` starts with, `ew`
/// ends with, `ct` contains) compares, FIQL-style as HarperDB's REST does.
pub(super) fn condition(attribute: &str, declared: Option<&Attribute>, raw: &str) -> Criterion {
    use crate::appdb::records::SearchType as T;
    let (search_type, text) = match raw.split_once('=') {
        Some(("gt", rest)) => (T::GreaterThan, rest),
        Some(("ge", rest)) => (T::GreaterThanEqual, rest),
        Some(("lt", rest)) => (T::LessThan, rest),
        Some(("le", rest)) => (T::LessThanEqual, rest),
        Some(("ne", rest)) => (T::NotEqual, rest),
        Some(("sw", rest)) => (T::StartsWith, rest),
        Some(("ew", rest)) => (T::EndsWith, rest),
        Some(("ct", rest)) => (T::Contains, rest),
        _ => (T::Equals, raw),
    };
    let value = match search_type {
        T::StartsWith | T::EndsWith | T::Contains => Value::String(text.to_owned()),
        _ => value_from_query(declared, text),
    };
    Criterion { attribute: attribute.to_owned(), search_type, value }
}
