//! Every kind of source Lore has, registered here and nowhere else: a new
//! kind is a module beside these and one line in [`KINDS`] (see
//! `docs/source-kinds.md`).

pub mod git;
pub mod page_bank;
pub mod table;
pub mod upload;
pub mod website;

use super::connector::AnyConnector;

/// The registered kinds, in the order the console offers them.
pub static KINDS: &[&dyn AnyConnector] =
    &[&website::Website, &upload::Upload, &git::Git, &table::TableKind, &page_bank::PageBank];

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use serde_json::{json, Value};

    use crate::sources::connector::Input;
    use crate::sources::SourceKind;

    /// What the console sends for a field holding `entered`.
    fn sent(input: Input, entered: &str) -> Value {
        match input {
            Input::List => entered.split(',').map(|item| Value::from(item.trim())).collect(),
            Input::Number { .. } => entered.parse::<u64>().map(Value::from).unwrap(),
            Input::Text | Input::Url | Input::Choice(_) => entered.into(),
        }
    }

    #[test]
    fn kinds_have_one_key_each_and_every_form_field_fills_a_key_the_kind_takes() {
        let keys: HashSet<&str> = SourceKind::all().map(SourceKind::key).collect();
        assert_eq!(keys.len(), super::KINDS.len(), "two kinds share a key");
        for kind in SourceKind::all().filter(|kind| kind.info().available) {
            let info = kind.info();
            // Every field at once, filled as an admin would.
            let config: serde_json::Map<String, Value> = info
                .fields
                .iter()
                .map(|field| {
                    let entered = match field.input {
                        Input::Choice(of) => of.last().map(|(value, _)| *value).unwrap(),
                        _ if !field.default.is_empty() => field.default,
                        _ => field.placeholder,
                    };
                    (field.key.to_owned(), sent(field.input, entered))
                })
                .collect();
            let given = (!info.fields.is_empty()).then_some(Value::Object(config.clone()));
            let parsed = kind.connector().parse(given).unwrap_or_else(|err| panic!("{}: {err}", info.key));
            // Each field's value comes back under its key, as the kind keeps it.
            for (key, value) in config {
                assert_eq!(parsed.to_json().get(&key), Some(&value), "{}: field {key}", info.key);
            }
            // A key no field or configuration has is refused, naming it.
            if !info.fields.is_empty() {
                let mut wrong = parsed.to_json();
                wrong["colour"] = json!("blue");
                let refused = kind.connector().parse(Some(wrong)).err().unwrap().to_string();
                assert!(refused.contains("colour"), "{}: {refused}", info.key);
            }
        }
    }

    #[test]
    fn an_unknown_kind_is_refused_naming_the_kinds_that_can_be_created() {
        let refused = SourceKind::parse("gopher").unwrap_err().to_string();
        assert!(refused.contains("\"gopher\""), "{refused}");
        for kind in SourceKind::all() {
            assert_eq!(refused.contains(kind.key()), kind.info().available, "{refused}");
        }
    }

    #[test]
    fn an_upload_source_takes_no_configuration() {
        let upload = SourceKind::parse("upload").unwrap().connector();
        assert_eq!(upload.parse(None).unwrap().to_json(), json!({}));
        assert_eq!(upload.parse(Some(json!({}))).unwrap().to_json(), json!({}));
        let refused = upload.parse(Some(json!({"start_url": "https://example.com/"}))).err().unwrap();
        assert!(refused.to_string().contains("takes no configuration"), "{refused}");
    }
}
