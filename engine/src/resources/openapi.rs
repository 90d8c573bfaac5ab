//! The OpenAPI document of what is exported over REST (`/data/openapi.json`).

use super::*;

/// The OpenAPI 3.0.3 document of the REST surface (SPEC: `svc://openapi`):
/// every resource exported over HTTP with the verbs it implements and its
/// record schema from the table's attributes (not narrowed per caller:
/// every call's permissions are checked when it runs).
pub async fn openapi(lore: &Lore) -> Result<Value> {
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for entry in registry(lore).await?.entries() {
        if !entry.export_types.http {
            continue;
        }
        let verbs = entry.resource.verbs();
        if verbs.is_empty() {
            continue;
        }
        let table = entry.resource.table(lore).await?;
        let name = schema_name(&entry.path);
        let reference = json!({"$ref": format!("#/components/schemas/{name}")});
        schemas.insert(name.clone(), record_schema(table.as_ref()));
        let tag = json!([entry.path]);
        let mut collection = Map::new();
        if verbs.contains(&Verb::Search) {
            collection.insert("get".into(), json!({
                "tags": tag, "summary": format!("Search {}", entry.path),
                "operationId": format!("search_{name}"),
                "parameters": [
                    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE}},
                    {"name": "cursor", "in": "query", "schema": {"type": "string"}},
                    {"name": "select", "in": "query", "description": "attributes to return, comma-separated", "schema": {"type": "string"}},
                ],
                "responses": {
                    "200": {"description": "a page of records", "content": {"application/json": {"schema": {
                        "type": "object", "properties": {"records": {"type": "array", "items": reference}, "next_cursor": {"type": "string", "nullable": true}}}}}},
                    "default": error_response(),
                },
            }));
        }
        if verbs.contains(&Verb::Post) {
            collection.insert("post".into(), json!({
                "tags": tag, "summary": format!("Create a record of {}", entry.path),
                "operationId": format!("create_{name}"),
                "requestBody": {"required": true, "content": {"application/json": {"schema": reference}}},
                "responses": {
                    "201": {"description": "created", "content": {"application/json": {"schema": {"type": "object", "properties": {"id": {}}}}}},
                    "default": error_response(),
                },
            }));
        }
        let mut item = Map::new();
        let id = json!([{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}]);
        for (verb, method, summary, body, ok) in [
            (
                Verb::Get,
                "get",
                "Read a record",
                false,
                json!({"200": {"description": "the record", "content": {"application/json": {"schema": reference}}}}),
            ),
            (
                Verb::Put,
                "put",
                "Write a record, creating it when missing",
                true,
                json!({"204": {"description": "written"}}),
            ),
            (
                Verb::Patch,
                "patch",
                "Change attributes of a record",
                true,
                json!({"204": {"description": "changed"}}),
            ),
            (Verb::Delete, "delete", "Delete a record", false, json!({"204": {"description": "deleted"}})),
        ] {
            if !verbs.contains(&verb) {
                continue;
            }
            let mut responses = ok;
            responses["default"] = error_response();
            let mut operation = json!({
                "tags": tag, "summary": summary, "operationId": format!("{}_{name}", verb.key()),
                "parameters": id, "responses": responses,
            });
            if body {
                operation["requestBody"] =
                    json!({"required": true, "content": {"application/json": {"schema": reference}}});
            }
            item.insert(method.into(), operation);
        }
        if !collection.is_empty() {
            paths.insert(format!("/data/{}/", entry.path), Value::Object(collection));
        }
        if !item.is_empty() {
            paths.insert(format!("/data/{}/{{id}}", entry.path), Value::Object(item));
        }
    }
    schemas.insert(
        "Error".into(),
        json!({"type": "object", "required": ["error"], "properties": {"error": {"type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}, "details": {"type": "object"}}}}}),
    );
    Ok(json!({
        "openapi": "3.0.3",
        "info": {"title": "Lore application data", "version": env!("CARGO_PKG_VERSION"),
                 "description": "The REST surface of the resources exported over HTTP."},
        "servers": [{"url": lore.settings.base_url()}],
        "components": {
            "schemas": schemas,
            "securitySchemes": {"apiKey": {"type": "apiKey", "in": "header", "name": "x-api-key"}},
        },
        "security": [{"apiKey": []}],
        "paths": paths,
    }))
}

pub(super) fn error_response() -> Value {
    json!({"description": "an error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}})
}

/// A component name from a resource path (`a/b.c` → `a_b_c`).
pub(super) fn schema_name(path: &str) -> String {
    path.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect()
}

/// A record's schema from the table's attributes (OpenAPI 3.0's flavour of
/// SPEC's type mapping: `nullable` rather than a type union).
pub(super) fn record_schema(table: Option<&Table>) -> Value {
    let Some(table) = table else {
        return json!({"type": "object"});
    };
    let mut properties = Map::new();
    for attribute in &table.attributes {
        let mut schema = match attribute.kind {
            AttrType::Int | AttrType::Long | AttrType::BigInt => json!({"type": "integer"}),
            AttrType::Float => json!({"type": "number"}),
            AttrType::String | AttrType::ID => json!({"type": "string"}),
            AttrType::Boolean => json!({"type": "boolean"}),
            AttrType::Date => {
                json!({"oneOf": [{"type": "string", "format": "date-time"}, {"type": "number"}]})
            }
            AttrType::Bytes | AttrType::Blob => json!({"type": "string", "format": "byte"}),
            AttrType::Object => json!({"type": "object"}),
            AttrType::Array => json!({"type": "array", "items": {}}),
            AttrType::Any => json!({}),
        };
        if attribute.managed.is_some() || attribute.computed.is_some() {
            schema["readOnly"] = Value::Bool(true);
        }
        if attribute.nullable && attribute.kind != AttrType::Any {
            schema["nullable"] = Value::Bool(true);
        }
        properties.insert(attribute.name.clone(), schema);
    }
    json!({"type": "object", "properties": properties})
}
