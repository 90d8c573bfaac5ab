//! The upload kind: files an admin uploads (Markdown, text, HTML, PDF …).
//! Nothing to configure; each upload queues a run (see
//! [`crate::ingest::upload`], which receives and stores the files).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ingest::IngestError;
use crate::sources::connector::{Connector, KindInfo, Run};
use crate::Result;

pub struct Upload;

pub const KEY: &str = "upload";

/// An upload source's configuration: none (`{}`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoConfig {}

const INFO: KindInfo = KindInfo {
    takes_files: true,
    ..KindInfo::new(KEY, "Uploaded files (Markdown, reStructuredText, AsciiDoc, text, HTML, PDF)")
};

#[async_trait]
impl Connector for Upload {
    type Config = NoConfig;

    fn info(&self) -> &'static KindInfo {
        &INFO
    }

    fn parse(&self, given: Option<Value>) -> Result<NoConfig, IngestError> {
        match given {
            None => Ok(NoConfig {}),
            Some(Value::Object(map)) if map.is_empty() => Ok(NoConfig {}),
            Some(_) => Err(IngestError::InvalidSource("an upload source takes no configuration".into())),
        }
    }

    async fn sync(&self, run: Run<'_>, _config: &NoConfig) -> Result<()> {
        crate::ingest::upload::sync(run.indexer, run.source, run.progress, run.cancel).await
    }
}
