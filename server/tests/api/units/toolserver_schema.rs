//! Tests of `lore_toolserver::schema`, the input schemas of the verb tools.

use engine::appdb::catalog::{AttrType, Attribute};
use lore_toolserver::schema::attribute_schema;
use serde_json::json;

fn attribute(kind: AttrType, nullable: bool) -> Attribute {
    Attribute { nullable, ..Attribute::new("a", kind) }
}

#[test]
fn every_type_maps_as_spec_says() {
    let cases = [
        (AttrType::Int, json!({"type": "integer"})),
        (AttrType::Long, json!({"type": "integer"})),
        (AttrType::BigInt, json!({"type": "integer"})),
        (AttrType::Float, json!({"type": "number"})),
        (AttrType::String, json!({"type": "string"})),
        (AttrType::ID, json!({"type": "string"})),
        (AttrType::Boolean, json!({"type": "boolean"})),
        (AttrType::Date, json!({"type": ["string", "number"]})),
        (AttrType::Bytes, json!({"type": "string", "contentEncoding": "base64"})),
        (AttrType::Blob, json!({"type": "string", "contentEncoding": "base64"})),
        (AttrType::Object, json!({"type": "object"})),
        (AttrType::Array, json!({"type": "array", "items": {}})),
    ];
    for (kind, expected) in cases {
        assert_eq!(attribute_schema(&attribute(kind, false)), expected, "{kind:?}");
    }
    assert_eq!(attribute_schema(&attribute(AttrType::Int, true)), json!({"type": ["integer", "null"]}));
    // What the schema file declares inside an Object or Array is described.
    let member = |name: &str, kind, nullable, shape| engine::appdb::catalog::Member {
        name: name.into(),
        kind,
        nullable,
        shape,
    };
    use engine::appdb::catalog::Shape;
    let toy = Shape::Object(vec![member("name", AttrType::String, false, None)]);
    let toys = Shape::Array(Box::new(member("", AttrType::Object, true, Some(toy))));
    let owner = Attribute {
        shape: Some(Shape::Object(vec![
            member("city", AttrType::String, true, None),
            member("toys", AttrType::Array, false, Some(toys)),
        ])),
        ..attribute(AttrType::Object, false)
    };
    assert_eq!(
        attribute_schema(&owner),
        json!({"type": "object", "properties": {
            "city": {"type": ["string", "null"]},
            "toys": {"type": "array", "items": {"type": ["object", "null"],
                "properties": {"name": {"type": "string"}}, "required": ["name"]}}},
            "required": ["toys"]})
    );
    assert_eq!(
        attribute_schema(&attribute(AttrType::Date, true)),
        json!({"type": ["string", "number", "null"]})
    );
}
