//! The page bank: announced in the console, not yet available. It shows how
//! a kind is listed before it can be created: `available: false`.

use async_trait::async_trait;

use super::upload::NoConfig;
use crate::ingest::IngestError;
use crate::sources::connector::{Connector, KindInfo, Run};
use crate::Result;

pub struct PageBank;

const INFO: KindInfo =
    KindInfo { available: false, ..KindInfo::new("page_bank", "Page bank (announced, not yet available)") };

#[async_trait]
impl Connector for PageBank {
    type Config = NoConfig;

    fn info(&self) -> &'static KindInfo {
        &INFO
    }

    async fn sync(&self, _run: Run<'_>, _config: &NoConfig) -> Result<()> {
        Err(IngestError::KindUnavailable(INFO.key.to_owned()).into())
    }
}
