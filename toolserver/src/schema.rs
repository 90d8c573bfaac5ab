//! Input schemas of the application profile's verb tools, from the table's
//! attributes by SPEC's type mapping, narrowed to what the user may read
//! or write (a convenience for the model: every call is still checked).

use serde_json::{json, Map, Value};

use engine::appdb::catalog::{AttrType, Attribute, Table};
use engine::appdb::{Access, Permission};
use engine::resources::Verb;
use lore_openapi::{type_schema, Dialect};

/// SPEC's input-schema type mapping for one attribute (the one mapping,
/// [`lore_openapi::type_schema`], in its JSON Schema dialect); an `Object`
/// or `Array` the schema file declares recurses into its fields or items.
pub fn attribute_schema(attribute: &Attribute) -> Value {
    type_schema(attribute.kind, attribute.nullable, attribute.shape.as_ref(), Dialect::JsonSchema)
}

/// The attributes a verb's schema offers this user: readable ones for get
/// and search, writable ones (not managed, not computed, and insertable or
/// updatable as the verb needs) for the writes.
fn offered<'t>(table: &'t Table, permission: &Permission, verb: Verb) -> Vec<&'t Attribute> {
    let may = |attribute: &Attribute, access| {
        permission.may_attribute(&table.database, &table.name, &attribute.name, access)
    };
    table
        .attributes
        .iter()
        .filter(|a| match verb {
            Verb::Get | Verb::Search | Verb::Delete => may(a, Access::Read),
            Verb::Post => a.managed.is_none() && a.computed.is_none() && may(a, Access::Insert),
            Verb::Put | Verb::Patch => a.managed.is_none() && a.computed.is_none() && may(a, Access::Update),
        })
        .collect()
}

fn object(properties: Map<String, Value>, required: Vec<String>) -> Value {
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

fn key_schema(table: &Table) -> Value {
    let key = table.key();
    attribute_schema(&Attribute { nullable: false, ..key.clone() })
}

fn attribute_names(attributes: &[&Attribute]) -> Value {
    let names: Vec<&str> = attributes.iter().map(|a| a.name.as_str()).collect();
    json!({"type": "array", "items": {"type": "string", "enum": names},
           "description": "The attributes to return (all readable ones when left out)."})
}

/// The input schema of `verb`'s tool on `table` for this user (SPEC's verb
/// table; a resource without a table takes any object).
pub fn verb_input(table: Option<&Table>, permission: &Permission, verb: Verb) -> Value {
    let Some(table) = table else {
        return json!({"type": "object"});
    };
    let key = table.primary_key.clone();
    let attributes = offered(table, permission, verb);
    match verb {
        Verb::Get => {
            let mut properties = Map::new();
            properties.insert(key.clone(), key_schema(table));
            properties.insert("get_attributes".into(), attribute_names(&attributes));
            object(properties, vec![key])
        }
        Verb::Delete => {
            let mut properties = Map::new();
            properties.insert(key.clone(), key_schema(table));
            object(properties, vec![key])
        }
        Verb::Search => {
            let names: Vec<&str> = attributes.iter().map(|a| a.name.as_str()).collect();
            let condition = json!({
                "type": "object",
                "properties": {
                    "search_attribute": {"type": "string", "enum": names},
                    "search_type": {"type": "string", "enum": [
                        "equals", "not_equal", "contains", "starts_with", "ends_with",
                        "greater_than", "greater_than_equal", "less_than", "less_than_equal", "between"]},
                    "search_value": {},
                },
                "required": ["search_attribute", "search_value"],
            });
            let mut properties = Map::new();
            properties.insert("conditions".into(), json!({"type": "array", "items": condition}));
            properties.insert("operator".into(), json!({"type": "string", "enum": ["and", "or"]}));
            properties.insert("get_attributes".into(), attribute_names(&attributes));
            properties.insert(
                "limit".into(),
                json!({"type": "integer", "minimum": 1, "maximum": engine::resources::MAX_PAGE}),
            );
            properties.insert(
                "cursor".into(),
                json!({"type": "string", "description": "The next_cursor of the previous page."}),
            );
            object(properties, Vec::new())
        }
        Verb::Post | Verb::Put | Verb::Patch => {
            let mut properties = Map::new();
            let mut required = Vec::new();
            if verb != Verb::Post {
                properties.insert(key.clone(), key_schema(table));
                required.push(key.clone());
            }
            for attribute in attributes {
                properties.insert(attribute.name.clone(), attribute_schema(attribute));
                let needed = verb == Verb::Post
                    && !attribute.nullable
                    && attribute.name != key
                    && attribute.kind != AttrType::Any;
                if needed {
                    required.push(attribute.name.clone());
                }
            }
            object(properties, required)
        }
    }
}

/// The output schema of `verb`'s tool (its `structuredContent`).
pub fn verb_output(verb: Verb) -> Value {
    match verb {
        Verb::Get => {
            json!({"type": "object", "properties": {"record": {"type": ["object", "null"]}}, "required": ["record"]})
        }
        Verb::Search => json!({"type": "object", "properties": {
            "records": {"type": "array", "items": {"type": "object"}},
            "next_cursor": {"type": ["string", "null"]}}, "required": ["records"]}),
        Verb::Post => json!({"type": "object", "properties": {"id": {}}, "required": ["id"]}),
        Verb::Put | Verb::Patch => {
            json!({"type": "object", "properties": {"updated": {"type": "boolean"}}, "required": ["updated"]})
        }
        Verb::Delete => {
            json!({"type": "object", "properties": {"deleted": {"type": "boolean"}}, "required": ["deleted"]})
        }
    }
}

/// What `svc://schema/{database}/{table}` says of a table: the attributes
/// this user may read, with their types and roles.
pub fn table_document(table: &Table, permission: &Permission) -> Value {
    let attributes: Vec<Value> = offered(table, permission, Verb::Get)
        .into_iter()
        .map(|a| {
            json!({
                "name": a.name,
                "type": a.kind.name(),
                "nullable": a.nullable,
                "indexed": a.indexed,
                "primary_key": a.name == table.primary_key,
                "managed": a.managed,
                "computed": a.computed.is_some(),
                "schema": attribute_schema(a),
            })
        })
        .collect();
    json!({
        "database": table.database,
        "table": table.name,
        "primary_key": table.primary_key,
        "attributes": attributes,
    })
}
