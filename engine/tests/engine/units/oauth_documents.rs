//! `engine::oauth::documents`: what a client ID metadata document must say of itself.

use engine::oauth::documents::{validate, Document};
use engine::oauth::OAuthCode;
use serde_json::json;

fn document(value: serde_json::Value) -> Document {
    serde_json::from_value(value).unwrap()
}

const ID: &str = "https://app.example/oauth/client.json";

#[test]
fn a_document_must_name_itself_and_be_a_public_client() {
    let good = json!({"client_id": ID, "client_name": "App", "redirect_uris": ["http://127.0.0.1/cb"]});
    let client = validate(ID, document(good.clone())).unwrap();
    assert_eq!(client.name, "App");
    assert_eq!(client.redirect_uris, vec!["http://127.0.0.1/cb".to_owned()]);

    let mut elsewhere = good.clone();
    elsewhere["client_id"] = json!("https://app.example/other.json");
    let refused = validate(ID, document(elsewhere)).unwrap_err();
    assert_eq!(refused.code, OAuthCode::InvalidClientMetadata);
    assert!(refused.description.contains("not the address"), "{}", refused.description);

    let mut secret = good.clone();
    secret["client_secret"] = json!("s3cret");
    assert!(validate(ID, document(secret)).unwrap_err().description.contains("client_secret"));

    let mut keyed = good.clone();
    keyed["token_endpoint_auth_method"] = json!("private_key_jwt");
    assert!(validate(ID, document(keyed)).is_err());

    let mut far = good.clone();
    far["redirect_uris"] = json!(["http://192.168.1.9/cb"]);
    assert!(validate(ID, document(far)).is_err(), "plain http only to loopback");

    // What a client says of itself is checked as at registration: a
    // logo that is not an https URL is refused, not dropped.
    let mut logo = good.clone();
    logo["logo_uri"] = json!("https://app.example/logo.png");
    assert_eq!(
        validate(ID, document(logo.clone())).unwrap().logo_uri.as_deref(),
        Some("https://app.example/logo.png")
    );
    logo["logo_uri"] = json!("javascript:alert(1)");
    let refused = validate(ID, document(logo)).unwrap_err();
    assert_eq!(refused.code, OAuthCode::InvalidClientMetadata);
    assert!(refused.description.contains("logo_uri"), "{}", refused.description);

    let mut nameless = good;
    nameless["client_name"] = json!(" ");
    assert_eq!(validate(ID, document(nameless)).unwrap().name, "app.example", "the host stands in");
}
