//! Tests of `lore_openapi`, the OpenAPI documents of Lore's HTTP surfaces.

use engine::resources::{HttpExport, Verb};
use lore_openapi::{data_document, schema_name};

#[test]
fn a_resource_path_is_a_component_name() {
    assert_eq!(schema_name("a/b.c-d"), "a_b_c_d");
    assert_eq!(schema_name("dogs_2"), "dogs_2");
}

/// Only the verbs a resource implements are documented, each at the
/// path REST serves it on, and every path refers to schemas the
/// document defines.
#[test]
fn only_the_implemented_verbs_are_documented() {
    let exports =
        [HttpExport { path: "kennel/dogs".into(), verbs: vec![Verb::Search, Verb::Get], table: None }];
    let document = data_document(&exports, "http://lore.test");
    assert_eq!(document["servers"][0]["url"], "http://lore.test");
    let paths = document["paths"].as_object().unwrap();
    let methods = |path: &str| -> Vec<String> { paths[path].as_object().unwrap().keys().cloned().collect() };
    assert_eq!(methods("/data/kennel/dogs/"), ["get"]);
    assert_eq!(methods("/data/kennel/dogs/{id}"), ["get"]);
    assert_eq!(paths["/data/kennel/dogs/{id}"]["get"]["operationId"], "get_kennel_dogs");
    assert!(document["components"]["schemas"]["kennel_dogs"].is_object());
    assert!(document["components"]["schemas"]["Error"].is_object());
}
