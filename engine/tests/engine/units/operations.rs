//! `engine::operations`: the operations' table, their typed arguments, annotations and gate.

use engine::appdb::Permission;
use engine::operations::{find, verify, Operation, OPERATIONS};
use serde_json::{json, Map};

#[test]
fn names_are_unique_and_schemas_generate() {
    for spec in OPERATIONS {
        assert_eq!(OPERATIONS.iter().filter(|s| s.name == spec.name).count(), 1, "{}", spec.name);
        let schema = (spec.input_schema)();
        assert_eq!(schema["type"], "object", "{}: {schema}", spec.name);
    }
    assert_eq!(find("create_schema").map(|s| s.name), Some("create_database"));
    assert_eq!(find("search_by_hash").map(|s| s.name), Some("search_by_id"));
}

#[test]
fn a_call_is_read_into_its_typed_operation_or_refused_naming_the_operation() {
    let spec = find("describe_table").unwrap();
    let mut args = Map::new();
    args.insert("table".into(), json!("dog"));
    assert!(matches!((spec.parse)(spec, args), Ok(Operation::DescribeTable(ref a)) if a.table == "dog"));
    let refused = (spec.parse)(spec, Map::new()).err().unwrap().to_string();
    assert!(refused.contains("describe_table") && refused.contains("`table`"), "{refused}");
    // An alias reads into the operation it names.
    let alias = find("describe_schema").unwrap();
    assert!(matches!((alias.parse)(alias, Map::new()), Ok(Operation::DescribeDatabase(_))));
}

#[test]
fn annotations_follow_the_spec_table() {
    let spec = |name| find(name).unwrap();
    assert!(spec("describe_all").read_only() && !spec("describe_all").destructive());
    assert!(spec("drop_table").destructive() && spec("delete").destructive());
    assert!(!spec("insert").read_only() && !spec("insert").destructive());
    assert!(spec("system_information").read_only());
}

#[test]
fn the_operation_gate_reads_the_tree() {
    let data = find("search_by_id").unwrap();
    let structure = find("create_table").unwrap();
    let admin = find("add_role").unwrap();
    let harper_role = Permission::parse(&json!({"dev": {"tables": {"dog": {"read": true}}}})).unwrap();
    assert!(verify(&harper_role, data, Some("dev")).is_ok());
    assert!(verify(&harper_role, structure, Some("dev")).is_err());
    let listed = Permission::parse(&json!({"operations": ["describe_all"]})).unwrap();
    assert!(verify(&listed, data, Some("dev")).is_err());
    assert!(verify(&listed, find("describe_all").unwrap(), None).is_ok());
    let structure_user = Permission::parse(&json!({"structure_user": ["dev"]})).unwrap();
    assert!(verify(&structure_user, structure, Some("dev")).is_ok());
    assert!(verify(&structure_user, structure, Some("prod")).is_err());
    assert!(verify(&Permission::parse(&json!({"operations": ["add_role"]})).unwrap(), admin, None).is_err());
    assert!(verify(&Permission::super_user(), admin, None).is_ok());
}
