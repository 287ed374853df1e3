//! Stage 1: resolve the name the caller used (exposed name or alias) to a catalog entry.

use std::sync::Arc;

use super::CallError;
use crate::{Catalog, CatalogEntry};

pub fn resolve<'c>(catalog: &'c Catalog, name: &str) -> Result<&'c Arc<CatalogEntry>, CallError> {
    catalog.resolve(name).ok_or_else(|| CallError::UnknownTool {
        name: name.to_owned(),
    })
}
