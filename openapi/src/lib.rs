//! The OpenAPI 3.0.3 documents of Lore's HTTP surfaces, from one
//! generator ([`Document`]): every document has the same `info`, server,
//! key scheme (`x-api-key`, required unless an operation says otherwise)
//! and error body. The public API's (`/openapi.json`) is filled by the
//! server from its wire types; the REST surface's (`/data/openapi.json`,
//! and the tool server's `svc://openapi`) by [`data_document`] from what
//! the engine exports.

use engine::appdb::catalog::{AttrType, Shape, Table};
use engine::resources::{HttpExport, Verb, MAX_PAGE};
use serde_json::{json, Map, Value};

/// One OpenAPI document being written.
pub struct Document {
    info: Value,
    base_url: String,
    paths: Map<String, Value>,
    schemas: Map<String, Value>,
    security_schemes: Map<String, Value>,
}

impl Document {
    /// A document titled `title` for the server at `base_url`, with the
    /// `apiKey` scheme (the `x-api-key` header) every operation needs
    /// unless it names another.
    pub fn new(title: &str, description: &str, base_url: &str) -> Self {
        let mut security_schemes = Map::new();
        security_schemes
            .insert("apiKey".into(), json!({"type": "apiKey", "in": "header", "name": "x-api-key"}));
        Self {
            info: json!({"title": title, "version": env!("CARGO_PKG_VERSION"), "description": description}),
            base_url: base_url.to_owned(),
            paths: Map::new(),
            schemas: Map::new(),
            security_schemes,
        }
    }

    /// Adds operation `operation` at `method` of `path`.
    pub fn operation(&mut self, path: &str, method: &str, operation: Value) {
        let item = self.paths.entry(path.to_owned()).or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(item) = item {
            item.insert(method.to_owned(), operation);
        }
    }

    /// Adds a component schema, referred to as `#/components/schemas/<name>`.
    pub fn schema(&mut self, name: &str, schema: Value) {
        self.schemas.insert(name.to_owned(), schema);
    }

    /// Adds the component schemas `schemas` (as a schema generator takes
    /// them out).
    pub fn schemas(&mut self, schemas: impl IntoIterator<Item = (String, Value)>) {
        self.schemas.extend(schemas);
    }

    /// Adds a security scheme beside `apiKey`.
    pub fn security_scheme(&mut self, name: &str, scheme: Value) {
        self.security_schemes.insert(name.to_owned(), scheme);
    }

    /// The document.
    pub fn into_value(self) -> Value {
        json!({
            "openapi": "3.0.3",
            "info": self.info,
            "servers": [{"url": self.base_url}],
            "security": [{"apiKey": []}],
            "paths": self.paths,
            "components": {"schemas": self.schemas, "securitySchemes": self.security_schemes},
        })
    }
}

/// A reference to component schema `name`.
pub fn reference(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

/// A response whose body is the error body of schema `error`.
pub fn error_response(description: &str, error: &Value) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": error}}})
}

/// The document of the REST surface under `/data/` (SPEC: `svc://openapi`):
/// every resource exported over HTTP with the verbs it implements and its
/// record schema from the table's attributes.
pub fn data_document(exports: &[HttpExport], base_url: &str) -> Value {
    let mut document = Document::new(
        "Lore application data",
        "The REST surface of the resources exported over HTTP.",
        base_url,
    );
    let error = || error_response("an error", &reference("Error"));
    for export in exports {
        let name = schema_name(&export.path);
        let record = reference(&name);
        document.schema(&name, record_schema(export.table.as_ref()));
        let tag = json!([export.path]);
        let collection = format!("/data/{}/", export.path);
        if export.verbs.contains(&Verb::Search) {
            document.operation(&collection, "get", json!({
                "tags": tag, "summary": format!("Search {}", export.path),
                "operationId": format!("search_{name}"),
                "parameters": [
                    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE}},
                    {"name": "cursor", "in": "query", "schema": {"type": "string"}},
                    {"name": "select", "in": "query", "description": "attributes to return, comma-separated", "schema": {"type": "string"}},
                ],
                "responses": {
                    "200": {"description": "a page of records", "content": {"application/json": {"schema": {
                        "type": "object", "properties": {"records": {"type": "array", "items": record}, "next_cursor": {"type": "string", "nullable": true}}}}}},
                    "default": error(),
                },
            }));
        }
        if export.verbs.contains(&Verb::Post) {
            document.operation(&collection, "post", json!({
                "tags": tag, "summary": format!("Create a record of {}", export.path),
                "operationId": format!("create_{name}"),
                "requestBody": {"required": true, "content": {"application/json": {"schema": record}}},
                "responses": {
                    "201": {"description": "created", "content": {"application/json": {"schema": {"type": "object", "properties": {"id": {}}}}}},
                    "default": error(),
                },
            }));
        }
        let item = format!("/data/{}/{{id}}", export.path);
        let id = json!([{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}]);
        for (verb, method, summary, body, ok) in [
            (
                Verb::Get,
                "get",
                "Read a record",
                false,
                json!({"200": {"description": "the record", "content": {"application/json": {"schema": record}}}}),
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
            if !export.verbs.contains(&verb) {
                continue;
            }
            let mut responses = ok;
            responses["default"] = error();
            let mut operation = json!({
                "tags": tag, "summary": summary, "operationId": format!("{}_{name}", verb.key()),
                "parameters": id, "responses": responses,
            });
            if body {
                operation["requestBody"] =
                    json!({"required": true, "content": {"application/json": {"schema": record}}});
            }
            document.operation(&item, method, operation);
        }
    }
    document.schema(
        "Error",
        json!({"type": "object", "required": ["error"], "properties": {"error": {"type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}, "details": {"type": "object"}}}}}),
    );
    document.into_value()
}

/// A component name from a resource path (`a/b.c` → `a_b_c`).
pub fn schema_name(path: &str) -> String {
    path.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect()
}

/// A record's schema from the table's attributes (in OpenAPI 3.0's
/// [`Dialect`]).
fn record_schema(table: Option<&Table>) -> Value {
    let Some(table) = table else {
        return json!({"type": "object"});
    };
    let mut properties = Map::new();
    for attribute in &table.attributes {
        let mut schema =
            type_schema(attribute.kind, attribute.nullable, attribute.shape.as_ref(), Dialect::OpenApi30);
        if attribute.managed.is_some() || attribute.computed.is_some() {
            schema["readOnly"] = Value::Bool(true);
        }
        properties.insert(attribute.name.clone(), schema);
    }
    json!({"type": "object", "properties": properties})
}

/// The JSON Schema flavour a type is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// JSON Schema as MCP tools take it (SPEC's input-schema type mapping):
    /// a nullable type is a union with `"null"`, bytes are
    /// `contentEncoding: base64`, a date is a string or a number.
    JsonSchema,
    /// OpenAPI 3.0's: `nullable: true`, bytes as `format: byte`, a date as
    /// `oneOf` an RFC 3339 string and a number.
    OpenApi30,
}

/// The schema of a value of `kind` in `dialect`, the one type mapping of
/// every schema Lore publishes (tool schemas, `svc://schema`, the OpenAPI
/// documents); an `Object` or `Array` the schema file declares recurses
/// into its fields or items.
pub fn type_schema(kind: AttrType, nullable: bool, shape: Option<&Shape>, dialect: Dialect) -> Value {
    let openapi = dialect == Dialect::OpenApi30;
    let mut schema = match kind {
        AttrType::Int | AttrType::Long | AttrType::BigInt => json!({"type": "integer"}),
        AttrType::Float => json!({"type": "number"}),
        AttrType::String | AttrType::ID => json!({"type": "string"}),
        AttrType::Boolean => json!({"type": "boolean"}),
        AttrType::Date if openapi => {
            json!({"oneOf": [{"type": "string", "format": "date-time"}, {"type": "number"}]})
        }
        AttrType::Date => json!({"type": ["string", "number"]}),
        AttrType::Bytes | AttrType::Blob if openapi => json!({"type": "string", "format": "byte"}),
        AttrType::Bytes | AttrType::Blob => json!({"type": "string", "contentEncoding": "base64"}),
        AttrType::Object => match shape {
            Some(Shape::Object(fields)) => {
                let properties: Map<String, Value> = fields
                    .iter()
                    .map(|f| (f.name.clone(), type_schema(f.kind, f.nullable, f.shape.as_ref(), dialect)))
                    .collect();
                let mut schema = json!({"type": "object", "properties": properties});
                let required: Vec<&str> = fields
                    .iter()
                    .filter(|f| !f.nullable && f.kind != AttrType::Any)
                    .map(|f| f.name.as_str())
                    .collect();
                if !required.is_empty() {
                    schema["required"] = json!(required);
                }
                schema
            }
            _ => json!({"type": "object"}),
        },
        AttrType::Array => {
            let items = match shape {
                Some(Shape::Array(items)) => {
                    type_schema(items.kind, items.nullable, items.shape.as_ref(), dialect)
                }
                _ => json!({}),
            };
            json!({"type": "array", "items": items})
        }
        AttrType::Any => return json!({}),
    };
    if nullable && openapi {
        schema["nullable"] = Value::Bool(true);
    } else if nullable {
        schema["type"] = match schema["type"].take() {
            Value::Array(mut kinds) => {
                kinds.push(json!("null"));
                Value::Array(kinds)
            }
            single => json!([single, "null"]),
        };
    }
    schema
}
