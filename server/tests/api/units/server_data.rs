//! `lore_server::http::data`: how a `/data/` query string reads.

use engine::appdb::records::SearchType;
use lore_server::http::data::rest_query;

fn pairs(raw: &[(&str, &str)]) -> Vec<(String, String)> {
    raw.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect()
}

#[test]
fn a_query_string_reads_into_selection_page_and_conditions() {
    let query =
        rest_query(pairs(&[("select", "name, age"), ("limit", "5"), ("age", "gt=3"), ("name", "Rex")]))
            .unwrap();
    assert_eq!(query.select, ["name", "age"]);
    assert_eq!(query.limit, Some(5));
    let conditions: Vec<(&str, SearchType, &str)> =
        query.conditions.iter().map(|c| (c.attribute.as_str(), c.search_type, c.text.as_str())).collect();
    assert_eq!(conditions, [("age", SearchType::GreaterThan, "3"), ("name", SearchType::Equals, "Rex")]);
    // An operator it does not know is part of the value.
    let query = rest_query(pairs(&[("note", "xx=1")])).unwrap();
    assert_eq!(query.conditions[0].search_type, SearchType::Equals);
    assert_eq!(query.conditions[0].text, "xx=1");
}

#[test]
fn a_limit_outside_the_page_is_refused() {
    for limit in ["0", "1001", "ten", "-1"] {
        let refused = rest_query(pairs(&[("limit", limit)])).err().unwrap();
        assert!(refused.to_string().contains("`limit`"), "{limit}: {refused}");
    }
}
