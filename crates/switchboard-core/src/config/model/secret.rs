//! A secret value in the config (an API key, a password in a URL), kept out of `Debug`
//! output so a printed config never shows it.

/// A secret (an API key): compared and cloned like a string, but `Debug` prints `***`, so
/// it never shows in a printed config.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretString(pub String);

impl SecretString {
    /// The secret itself.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for SecretString {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}
