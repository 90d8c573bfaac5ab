//! REST under `/data/`: a path resolved to a resource and a record, a
//! method to a verb, the query's values typed by their attributes (the edge
//! reads the query string's syntax); and the writes a table source hears about.

use super::*;

/// After a write to `table` committed (every surface's writes come
/// here): the table sources on it are noted for re-indexing, and the write
/// watchers (the tool server's push channels) are told.
pub(crate) fn written(lore: &Lore, table: &Table, ids: &[Value]) {
    if !ids.is_empty() {
        lore.table_writes().note(table);
    }
    lore.tell_written(table, ids);
}

/// Told after a write to an application table committed, on any surface,
/// with the primary keys written (see [`Lore::watch_writes`]). Called on
/// the writer's task: it must not block.
pub trait WriteWatcher: Send + Sync {
    fn written(&self, table: &Table, ids: &[Value]);
}

/// A REST call under `/data/`: the method, the path after `/data/`, the
/// query (as the edge read it) and the JSON body.
#[derive(Clone, Debug)]
pub struct RestRequest {
    pub method: RestMethod,
    pub path: String,
    pub query: RestQuery,
    pub body: Option<Value>,
}

/// A REST query: the attributes to return, the page, and the conditions
/// (all must hold), each value as written, typed here by its attribute.
#[derive(Clone, Debug, Default)]
pub struct RestQuery {
    pub select: Vec<String>,
    pub limit: Option<u64>,
    pub cursor: Option<String>,
    pub conditions: Vec<RestCondition>,
}

/// One condition of a [`RestQuery`].
#[derive(Clone, Debug)]
pub struct RestCondition {
    pub attribute: String,
    pub search_type: crate::appdb::records::SearchType,
    pub text: String,
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
    let RestRequest { method, path, query: asked, body } = request;
    let (entry, id) = route(lore, &path).await?;
    let resource = &entry.resource;
    let verb = match (method, id.is_some()) {
        (RestMethod::Get, false) => Verb::Search,
        (RestMethod::Get, true) => Verb::Get,
        (RestMethod::Post, false) => Verb::Post,
        (RestMethod::Put, true) => Verb::Put,
        (RestMethod::Patch, true) => Verb::Patch,
        (RestMethod::Delete, true) => Verb::Delete,
        (method, _) => {
            return Err(AppDbError::Invalid(format!(
                "{method:?} is not served at `/data/{}`: GET and POST at `<path>/`, GET, PUT, PATCH and DELETE at `<path>/<id>`",
                path
            ))
            .into())
        }
    };
    if !resource.verbs().contains(&verb) {
        return Err(unsupported(verb));
    }
    let table = resource.table(lore).await?;
    let id = id.map(|raw| key_from_path(table.as_ref(), &raw));
    let conditions = asked
        .conditions
        .iter()
        .map(|c| condition(c, table.as_ref().and_then(|t| t.attribute(&c.attribute))))
        .collect();
    let query = Query {
        conditions,
        select: asked.select,
        limit: asked.limit,
        cursor: asked.cursor,
        ..Query::default()
    };
    let body = move || -> Result<Record> {
        match body {
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

/// A condition of a REST query, its value typed by the attribute's declared
/// type (a text search's is text).
pub(super) fn condition(condition: &RestCondition, declared: Option<&Attribute>) -> Criterion {
    use crate::appdb::records::SearchType as T;
    let value = match condition.search_type {
        T::StartsWith | T::EndsWith | T::Contains => Value::String(condition.text.clone()),
        _ => value_from_query(declared, &condition.text),
    };
    Criterion { attribute: condition.attribute.clone(), search_type: condition.search_type, value }
}
