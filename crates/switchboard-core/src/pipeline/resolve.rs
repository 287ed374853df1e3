//! Stage 1: resolve the name the caller used (exposed name or alias) to a catalog entry in
//! the caller's view. A tool outside the view gets the same answer as a tool that does not
//! exist, so a caller cannot probe for tools it may not see.

use std::sync::Arc;

use super::CallError;
use crate::agent::View;
use crate::{Catalog, CatalogEntry};

pub fn resolve<'c>(
    catalog: &'c Catalog,
    view: &dyn View,
    name: &str,
) -> Result<&'c Arc<CatalogEntry>, CallError> {
    catalog
        .resolve(name)
        .filter(|entry| view.contains(entry))
        .ok_or_else(|| CallError::UnknownTool {
            name: name.to_owned(),
        })
}
