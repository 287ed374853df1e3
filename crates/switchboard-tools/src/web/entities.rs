//! HTML character references: `&amp;`, `&eacute;`, `&#233;`, `&#x1F600;` and the named
//! ones pages commonly use; numeric references in 0x80–0x9F read as Windows-1252, as browsers
//! do.

/// `text` with character references (`&amp;`, `&#233;`, `&#x1F600;`) decoded; unknown
/// names are kept as written.
pub fn decode_entities(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('&') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let end = rest[1..]
            .char_indices()
            .take(33)
            .find(|&(_, c)| c == ';' || c == '&' || c.is_whitespace() || c == '<')
            .filter(|&(_, c)| c == ';')
            .map(|(i, _)| i + 1);
        let decoded = end.and_then(|end| reference(&rest[1..end]).map(|c| (c, end)));
        match decoded {
            Some((c, end)) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// The character a reference's body (between `&` and `;`) names.
fn reference(body: &str) -> Option<char> {
    if let Some(number) = body.strip_prefix('#') {
        let code = match number.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => number.parse().ok()?,
        };
        return Some(match code {
            0 => '\u{fffd}',
            // Windows-1252 punctuation that pages send as numeric references.
            0x80..=0x9f => windows_1252(code as u8),
            _ => char::from_u32(code).unwrap_or('\u{fffd}'),
        });
    }
    let c = match body {
        "amp" | "AMP" => '&',
        "lt" | "LT" => '<',
        "gt" | "GT" => '>',
        "quot" | "QUOT" => '"',
        "apos" => '\'',
        "nbsp" => '\u{a0}',
        "shy" => '\u{ad}',
        "copy" => '©',
        "reg" => '®',
        "trade" => '™',
        "hellip" => '…',
        "mdash" => '—',
        "ndash" => '–',
        "lsquo" => '‘',
        "rsquo" => '’',
        "sbquo" => '‚',
        "ldquo" => '“',
        "rdquo" => '”',
        "bdquo" => '„',
        "laquo" => '«',
        "raquo" => '»',
        "lsaquo" => '‹',
        "rsaquo" => '›',
        "bull" => '•',
        "middot" => '·',
        "deg" => '°',
        "euro" => '€',
        "pound" => '£',
        "yen" => '¥',
        "cent" => '¢',
        "sect" => '§',
        "para" => '¶',
        "times" => '×',
        "divide" => '÷',
        "plusmn" => '±',
        "minus" => '−',
        "frac12" => '½',
        "frac14" => '¼',
        "frac34" => '¾',
        "micro" => 'µ',
        "dagger" => '†',
        "Dagger" => '‡',
        "larr" => '←',
        "rarr" => '→',
        "uarr" => '↑',
        "darr" => '↓',
        "harr" => '↔',
        "le" => '≤',
        "ge" => '≥',
        "ne" => '≠',
        "infin" => '∞',
        "iexcl" => '¡',
        "iquest" => '¿',
        "szlig" => 'ß',
        "thinsp" => '\u{2009}',
        "ensp" => '\u{2002}',
        "emsp" => '\u{2003}',
        "zwnj" => '\u{200c}',
        "zwj" => '\u{200d}',
        _ => return accented(body),
    };
    Some(c)
}

/// Latin-1 letters with a diacritic: `eacute`, `Uuml`, `ntilde`, `ccedil`, `aring`, ….
fn accented(body: &str) -> Option<char> {
    let mut chars = body.chars();
    let letter = chars.next()?;
    let mark = chars.as_str();
    let (base, marks): (&str, &str) = match mark {
        "grave" => ("AEIOUaeiou", "ÀÈÌÒÙàèìòù"),
        "acute" => ("AEIOUYaeiouy", "ÁÉÍÓÚÝáéíóúý"),
        "circ" => ("AEIOUaeiou", "ÂÊÎÔÛâêîôû"),
        "uml" => ("AEIOUaeiouy", "ÄËÏÖÜäëïöüÿ"),
        "tilde" => ("ANOano", "ÃÑÕãñõ"),
        "cedil" => ("Cc", "Çç"),
        "ring" => ("Aa", "Åå"),
        "slash" => ("Oo", "Øø"),
        _ => return None,
    };
    let index = base.chars().position(|c| c == letter)?;
    marks.chars().nth(index)
}

/// The character of a Windows-1252 byte from 0x80 to 0x9F.
pub fn windows_1252(byte: u8) -> char {
    const HIGH: [char; 32] = [
        '€', '\u{81}', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u{8d}', 'Ž',
        '\u{8f}', '\u{90}', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\u{9d}',
        'ž', 'Ÿ',
    ];
    HIGH.get(usize::from(byte.wrapping_sub(0x80)))
        .copied()
        .unwrap_or(char::from(byte))
}
