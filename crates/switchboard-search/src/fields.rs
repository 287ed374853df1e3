//! The searchable fields of a tool and how their text is pulled out of a definition.

use serde_json::Value;

use crate::SearchDoc;

/// Deepest nesting of `properties` whose names and descriptions are indexed.
const MAX_SCHEMA_DEPTH: usize = 3;

/// A field of a tool document, each with its own weight and length normalisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// Exposed name, upstream name and title.
    Name,
    Description,
    /// Input parameter names and their descriptions.
    Parameters,
    Server,
    Category,
}

impl Field {
    pub const ALL: [Field; 5] = [
        Field::Name,
        Field::Description,
        Field::Parameters,
        Field::Server,
        Field::Category,
    ];
    pub const COUNT: usize = Self::ALL.len();

    pub fn index(self) -> usize {
        self as usize
    }

    /// Whether the field is prose whose adjacent terms form phrases (see `phrases`). A
    /// parameter list, a server id or a category is a bag of names, not a sentence.
    pub(crate) fn holds_phrases(self) -> bool {
        matches!(self, Field::Name | Field::Description)
    }
}

/// The text of each field of `doc`, in [`Field::ALL`] order.
pub fn field_texts(doc: &SearchDoc) -> [String; Field::COUNT] {
    let definition = &doc.definition;
    let mut name = doc.name.clone();
    if definition.name != doc.name {
        name.push(' ');
        name.push_str(&definition.name);
    }
    if let Some(title) = &definition.title {
        name.push(' ');
        name.push_str(title);
    }
    let mut parameters = String::new();
    schema_text(&definition.input_schema, 0, &mut parameters);
    [
        name,
        definition.description.clone().unwrap_or_default(),
        parameters,
        doc.server.clone(),
        doc.category.clone(),
    ]
}

/// Property names and descriptions of a JSON Schema, depth-first, bounded in depth.
fn schema_text(schema: &Value, depth: usize, out: &mut String) {
    if depth > MAX_SCHEMA_DEPTH {
        return;
    }
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        if let Some(items) = schema.get("items") {
            schema_text(items, depth + 1, out);
        }
        return;
    };
    for (name, property) in properties {
        out.push_str(name);
        out.push(' ');
        if let Some(description) = property.get("description").and_then(Value::as_str) {
            out.push_str(description);
            out.push(' ');
        }
        schema_text(property, depth + 1, out);
    }
}

/// Parameter names only (no descriptions), for the plain baseline.
pub fn parameter_names(schema: &Value) -> String {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| properties.keys().cloned().collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
