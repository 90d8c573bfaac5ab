//! Tests of `app::pages::users`, users and roles on the Access screen.

use app::pages::users::{preset, summary};
use serde_json::json;

#[test]
fn presets_are_permission_trees() {
    assert_eq!(preset("super", "", &[]), json!({"super_user": true}));
    assert_eq!(preset("structure", " ", &[]), json!({"structure_user": true}));
    assert_eq!(preset("structure", "dev", &[]), json!({"structure_user": ["dev"]}));
    let tables = ["dog".to_owned(), "cat".to_owned()];
    let read_only = preset("read_only", "dev", &tables);
    assert_eq!(
        read_only["dev"]["tables"]["dog"],
        json!({"read": true, "insert": false, "update": false, "delete": false})
    );
    assert_eq!(read_only["dev"]["tables"].as_object().unwrap().len(), 2);
}

#[test]
fn a_role_is_summarised_in_words() {
    assert_eq!(summary(&json!({"super_user": true})), "super user");
    assert_eq!(summary(&json!({"structure_user": ["dev"]})), "structure of dev");
    assert_eq!(summary(&preset("read_only", "dev", &["dog".to_owned()])), "1 table(s) of dev");
    assert_eq!(summary(&json!({})), "nothing yet");
}
