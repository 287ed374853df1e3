//! The dice grammar: a hand-written lexer and a recursive-descent parser that keeps the
//! column of every token, so a bad expression is explained where it goes wrong.
//!
//! ```text
//! roll     := expr ("#" label)?
//! expr     := term (("+" | "-") term)*
//! term     := unary (("*" | "/") unary)*
//! unary    := "-" unary | primary
//! primary  := NUMBER | dice | "(" expr ")"
//! dice     := NUMBER? "d" (NUMBER | "%" | "F") modifier*
//! modifier := ("kh" | "k" | "kl" | "dh" | "dl" | "d") NUMBER    keep / drop highest / lowest
//!           | "!" (">=" NUMBER)?                                  explode (on max, or on >= N)
//!           | ("r" | "ro") ("<" | "<=")? NUMBER                   reroll (until not, or once)
//!           | (">=" | ">" | "<=" | "<" | "=") NUMBER              count successes
//!           | "adv" | "dis"                                        advantage / disadvantage
//! ```
//!
//! Directly after a dice term (no space between), a bare `d` followed by a number drops the
//! lowest (`4d6d1` = `4d6dl1`); `1d6 d6` is two dice terms without an operator, refused.
//! `adv` and `dis` roll one extra die and keep the highest / lowest (`d20 adv` = `2d20kh1`).

use super::DiceError;

/// Limits that keep every expression cheap.
pub const MAX_EXPRESSION_CHARS: usize = 1_000;
pub const MAX_NESTING: usize = 32;
pub const MAX_DICE: u64 = 1_000;
pub const MAX_SIDES: u64 = 1_000_000;

/// What a die has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sides {
    Number(u64),
    /// Fudge: −1, 0, +1.
    Fudge,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compare {
    AtLeast(i64),
    Above(i64),
    AtMost(i64),
    Below(i64),
    Equal(i64),
}

impl Compare {
    pub fn holds(self, value: i64) -> bool {
        match self {
            Self::AtLeast(n) => value >= n,
            Self::Above(n) => value > n,
            Self::AtMost(n) => value <= n,
            Self::Below(n) => value < n,
            Self::Equal(n) => value == n,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    Highest(u64),
    Lowest(u64),
    DropHighest(u64),
    DropLowest(u64),
}

/// One dice term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dice {
    pub count: u64,
    pub sides: Sides,
    pub keep: Option<Keep>,
    /// Explode when a die meets this (default: its maximum).
    pub explode: Option<Compare>,
    /// Reroll dice that meet this; `once` rerolls a die at most once.
    pub reroll: Option<(Compare, bool)>,
    /// Count dice that meet this instead of summing.
    pub success: Option<Compare>,
    /// The text of the term, for reports.
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    Number(i64),
    Dice(Dice),
    Negate(Box<Expr>),
    Binary(Box<Expr>, Op, Box<Expr>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Add,
    Subtract,
    Multiply,
    Divide,
}

/// A parsed roll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roll {
    pub expr: Expr,
    pub label: Option<String>,
}

struct Parser<'a> {
    chars: Vec<char>,
    at: usize,
    depth: usize,
    text: &'a str,
}

/// Parses an expression such as `4d6kh3 + 2 # strength`.
pub fn parse(text: &str) -> Result<Roll, DiceError> {
    if text.chars().count() > MAX_EXPRESSION_CHARS {
        return Err(DiceError::at(
            MAX_EXPRESSION_CHARS + 1,
            format!("the expression is longer than {MAX_EXPRESSION_CHARS} characters"),
        ));
    }
    let (body, label) = match text.split_once('#') {
        Some((body, label)) => (
            body,
            Some(label.trim().to_owned()).filter(|l| !l.is_empty()),
        ),
        None => (text, None),
    };
    let mut parser = Parser {
        chars: body.chars().collect(),
        at: 0,
        depth: 0,
        text,
    };
    parser.skip_space();
    if parser.at >= parser.chars.len() {
        return Err(DiceError::at(
            1,
            "the expression is empty: write e.g. \"1d20+5\"",
        ));
    }
    let expr = parser.expr()?;
    parser.skip_space();
    if let Some(c) = parser.peek() {
        return Err(parser.error(format!("unexpected '{c}'")));
    }
    let _ = parser.text;
    Ok(Roll { expr, label })
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn column(&self) -> usize {
        self.at + 1
    }

    fn error(&self, message: impl Into<String>) -> DiceError {
        DiceError::at(self.column(), message)
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.at += 1;
        }
    }

    fn eat(&mut self, text: &str) -> bool {
        let wanted: Vec<char> = text.chars().collect();
        let matches = self
            .chars
            .get(self.at..self.at + wanted.len())
            .is_some_and(|slice| {
                slice
                    .iter()
                    .zip(&wanted)
                    .all(|(a, b)| a.eq_ignore_ascii_case(b))
            });
        if matches {
            self.at += wanted.len();
        }
        matches
    }

    fn number(&mut self) -> Option<Result<u64, DiceError>> {
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        if self.at == start {
            return None;
        }
        let digits: String = self.chars[start..self.at].iter().collect();
        Some(
            digits
                .parse::<u64>()
                .map_err(|_| DiceError::at(start + 1, format!("the number {digits} is too large"))),
        )
    }

    /// A number that must follow `after` (e.g. "kh").
    fn number_after(&mut self, after: &str) -> Result<u64, DiceError> {
        self.number()
            .unwrap_or_else(|| Err(self.error(format!("expected a number after {after}"))))
    }

    fn expr(&mut self) -> Result<Expr, DiceError> {
        let mut left = self.term()?;
        loop {
            self.skip_space();
            let op = match self.peek() {
                Some('+') => Op::Add,
                Some('-') => Op::Subtract,
                _ => return Ok(left),
            };
            self.at += 1;
            let right = self.term()?;
            left = Expr::Binary(Box::new(left), op, Box::new(right));
        }
    }

    fn term(&mut self) -> Result<Expr, DiceError> {
        let mut left = self.unary()?;
        loop {
            self.skip_space();
            let op = match self.peek() {
                Some('*') => Op::Multiply,
                Some('/') => Op::Divide,
                _ => return Ok(left),
            };
            self.at += 1;
            let right = self.unary()?;
            left = Expr::Binary(Box::new(left), op, Box::new(right));
        }
    }

    fn unary(&mut self) -> Result<Expr, DiceError> {
        self.skip_space();
        if self.peek() == Some('-') {
            self.at += 1;
            self.nest()?;
            let inner = self.unary();
            self.depth -= 1;
            return Ok(Expr::Negate(Box::new(inner?)));
        }
        self.primary()
    }

    fn nest(&mut self) -> Result<(), DiceError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(self.error(format!("nested more than {MAX_NESTING} deep")));
        }
        Ok(())
    }

    fn primary(&mut self) -> Result<Expr, DiceError> {
        self.skip_space();
        let start = self.at;
        match self.peek() {
            Some('(') => {
                self.at += 1;
                self.nest()?;
                let inner = self.expr();
                self.depth -= 1;
                let inner = inner?;
                self.skip_space();
                if self.peek() != Some(')') {
                    return Err(self.error("expected ')'"));
                }
                self.at += 1;
                Ok(inner)
            }
            Some(c) if c.is_ascii_digit() || c == 'd' || c == 'D' => {
                let count = match self.number() {
                    Some(count) => Some(count?),
                    None => None,
                };
                if self.peek().is_some_and(|c| c == 'd' || c == 'D') {
                    self.at += 1;
                    self.dice(start, count.unwrap_or(1)).map(Expr::Dice)
                } else {
                    let value = count.unwrap_or(0);
                    i64::try_from(value)
                        .map(Expr::Number)
                        .map_err(|_| DiceError::at(start + 1, "the number is too large"))
                }
            }
            Some(c) => Err(self.error(format!(
                "expected a number, a die like d6, or '(' but found '{c}'"
            ))),
            None => Err(self.error("the expression ends too early")),
        }
    }

    fn dice(&mut self, start: usize, count: u64) -> Result<Dice, DiceError> {
        let sides = match self.peek() {
            Some('%') => {
                self.at += 1;
                Sides::Number(100)
            }
            Some('F') | Some('f') => {
                self.at += 1;
                Sides::Fudge
            }
            _ => match self.number() {
                Some(sides) => Sides::Number(sides?),
                None => return Err(self.error("expected the number of sides after d (d6, d%, dF)")),
            },
        };
        if count == 0 {
            return Err(DiceError::at(start + 1, "roll at least one die"));
        }
        if count > MAX_DICE {
            return Err(DiceError::at(
                start + 1,
                format!("at most {MAX_DICE} dice per roll"),
            ));
        }
        match sides {
            Sides::Number(0) => {
                return Err(DiceError::at(start + 1, "a die needs at least one side"));
            }
            Sides::Number(n) if n > MAX_SIDES => {
                return Err(DiceError::at(
                    start + 1,
                    format!("a die has at most {MAX_SIDES} sides"),
                ));
            }
            _ => {}
        }
        let mut dice = Dice {
            count,
            sides,
            keep: None,
            explode: None,
            reroll: None,
            success: None,
            text: String::new(),
        };
        self.modifiers(&mut dice)?;
        dice.text = self.chars[start..self.at]
            .iter()
            .collect::<String>()
            .trim()
            .to_owned();
        Ok(dice)
    }

    fn compare(&mut self) -> Option<Result<Compare, DiceError>> {
        let make: fn(i64) -> Compare = if self.eat(">=") {
            Compare::AtLeast
        } else if self.eat("<=") {
            Compare::AtMost
        } else if self.eat(">") {
            Compare::Above
        } else if self.eat("<") {
            Compare::Below
        } else if self.eat("=") {
            Compare::Equal
        } else {
            return None;
        };
        let value = self.number_after("the comparison");
        Some(value.and_then(|n| {
            i64::try_from(n)
                .map(make)
                .map_err(|_| self.error("the number is too large"))
        }))
    }

    fn modifiers(&mut self, dice: &mut Dice) -> Result<(), DiceError> {
        loop {
            let before = self.at;
            self.skip_space();
            let keep = |dice: &mut Dice, keep: Keep, parser: &Parser<'_>| {
                if dice.keep.is_some() {
                    return Err(parser.error("only one keep or drop per dice term"));
                }
                dice.keep = Some(keep);
                Ok(())
            };
            if self.eat("adv") || self.eat("dis") {
                let advantage = self.chars[self.at - 3].eq_ignore_ascii_case(&'a');
                if dice.count + 1 > MAX_DICE {
                    return Err(self.error(format!("at most {MAX_DICE} dice per roll")));
                }
                let kept = dice.count;
                dice.count += 1;
                let rule = if advantage {
                    Keep::Highest(kept)
                } else {
                    Keep::Lowest(kept)
                };
                keep(dice, rule, self)?;
            } else if self.eat("kh") {
                let n = self.number_after("kh")?;
                keep(dice, Keep::Highest(n), self)?;
            } else if self.eat("kl") {
                let n = self.number_after("kl")?;
                keep(dice, Keep::Lowest(n), self)?;
            } else if self.eat("dh") {
                let n = self.number_after("dh")?;
                keep(dice, Keep::DropHighest(n), self)?;
            } else if self.eat("dl") {
                let n = self.number_after("dl")?;
                keep(dice, Keep::DropLowest(n), self)?;
            } else if self.eat("k") {
                let n = self.number_after("k")?;
                keep(dice, Keep::Highest(n), self)?;
            } else if self.at == before
                && self.peek().is_some_and(|c| c == 'd' || c == 'D')
                && self
                    .chars
                    .get(self.at + 1)
                    .is_some_and(|c| c.is_ascii_digit())
            {
                self.at += 1;
                let n = self.number_after("d")?;
                keep(dice, Keep::DropLowest(n), self)?;
            } else if self.eat("!") {
                if dice.explode.is_some() {
                    return Err(self.error("only one ! per dice term"));
                }
                let rule = match self.compare() {
                    Some(rule) => rule?,
                    None => match dice.sides {
                        Sides::Number(n) => Compare::AtLeast(i64::try_from(n).unwrap_or(i64::MAX)),
                        Sides::Fudge => Compare::AtLeast(1),
                    },
                };
                if dice.sides == Sides::Number(1)
                    || matches!(rule, Compare::AtLeast(n) if n <= 1) && dice.sides != Sides::Fudge
                {
                    return Err(self.error("this die would explode on every roll"));
                }
                dice.explode = Some(rule);
            } else if self.eat("ro") || self.eat("r") {
                let once = self.chars[self.at - 1].eq_ignore_ascii_case(&'o');
                if dice.reroll.is_some() {
                    return Err(self.error("only one reroll per dice term"));
                }
                let rule = match self.compare() {
                    Some(rule) => rule?,
                    None => {
                        let n = self.number_after("r")?;
                        Compare::Equal(i64::try_from(n).unwrap_or(i64::MAX))
                    }
                };
                dice.reroll = Some((rule, once));
            } else if let Some(rule) = self.compare() {
                if dice.success.is_some() {
                    return Err(self.error("only one success condition per dice term"));
                }
                dice.success = Some(rule?);
            } else {
                self.at = before;
                return Ok(());
            }
        }
    }
}
