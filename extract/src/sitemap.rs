//! Sitemaps (`<urlset>` and `<sitemapindex>`), read as a stream of XML
//! events: the open-element path is a list, not a recursion, and quick-xml
//! expands no entity beyond the five predefined ones and character
//! references, so a document cannot grow itself (no "billion laughs").

#[derive(Debug, Default, PartialEq)]
pub struct Sitemap {
    /// Child sitemaps (of a sitemap index).
    pub sitemaps: Vec<String>,
    /// Pages with their `lastmod`.
    pub urls: Vec<(String, Option<String>)>,
}

/// Parses a `<urlset>` or a `<sitemapindex>` (namespaces ignored; entity
/// references such as `&amp;` in URLs resolved).
pub fn parse_sitemap(xml: &[u8]) -> Result<Sitemap, String> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_reader(xml);
    reader.config_mut().trim_text(true);
    let mut out = Sitemap::default();
    let mut path: Vec<String> = Vec::new();
    let (mut loc, mut lastmod) = (None::<String>, None::<String>);
    let mut text = String::new();
    let mut buf = Vec::new();
    loop {
        match reader.read_event_into(&mut buf).map_err(|err| err.to_string())? {
            Event::Start(tag) => {
                path.push(tag.local_name().as_ref().to_ascii_lowercase());
                text.clear();
            }
            Event::Text(piece) => text.push_str(&piece),
            Event::CData(piece) => text.push_str(&piece),
            Event::GeneralRef(entity) => {
                if let Ok(Some(c)) = entity.resolve_char_ref() {
                    text.push(c);
                } else {
                    text.push_str(match &*entity {
                        "amp" => "&",
                        "lt" => "<",
                        "gt" => ">",
                        "quot" => "\"",
                        "apos" => "'",
                        _ => "",
                    });
                }
            }
            Event::End(_) => match path.pop().unwrap_or_default().as_str() {
                "loc" => loc = Some(text.trim().to_owned()),
                "lastmod" => lastmod = Some(text.trim().to_owned()),
                "url" => {
                    if let Some(found) = loc.take() {
                        out.urls.push((found, lastmod.take()));
                    }
                    lastmod = None;
                }
                "sitemap" => {
                    if let Some(found) = loc.take() {
                        out.sitemaps.push(found);
                    }
                    lastmod = None;
                }
                _ => {}
            },
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    if !path.is_empty() {
        // Name only the innermost: a hostile sitemap may leave millions open.
        let innermost: String = path.last().map(|name| name.chars().take(64).collect()).unwrap_or_default();
        return Err(format!("{} unclosed elements, the innermost <{innermost}>", path.len()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sitemaps_and_sitemap_indexes_parse() {
        let urlset = br#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>https://docs.example.test/a</loc><lastmod>2026-11-01</lastmod></url>
  <url><loc> https://docs.example.test/b </loc></url>
</urlset>"#;
        let parsed = parse_sitemap(urlset).unwrap();
        assert_eq!(
            parsed.urls,
            vec![
                ("https://docs.example.test/a".to_owned(), Some("2026-11-01".to_owned())),
                ("https://docs.example.test/b".to_owned(), None)
            ]
        );
        let index = br#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>https://docs.example.test/s1.xml.gz</loc></sitemap></sitemapindex>"#;
        assert_eq!(
            parse_sitemap(index).unwrap().sitemaps,
            vec!["https://docs.example.test/s1.xml.gz".to_owned()]
        );
        assert!(parse_sitemap(b"<urlset><url><loc>x</url>").is_err());
    }
}
