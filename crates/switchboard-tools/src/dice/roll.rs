//! Rolling a parsed expression: every die rolled is recorded with what happened to it
//! (kept, dropped, exploded, rerolled, a success), totals use checked arithmetic, and no
//! expression can roll more than [`MAX_DICE`] dice in all, explosions and rerolls included.

use rand::Rng;
use serde::Serialize;

use super::DiceError;
use super::parse::{Compare, Dice, Expr, Keep, MAX_DICE, Op, Roll, Sides};

/// One die as rolled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Die {
    pub value: i64,
    pub kept: bool,
    /// This die was rolled because the one before it exploded.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub from_explosion: bool,
    /// The values this die showed before it was rerolled.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rerolled: Vec<i64>,
    /// Set when the term counts successes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub success: Option<bool>,
}

/// One dice term as rolled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TermRoll {
    pub term: String,
    pub dice: Vec<Die>,
    /// The term's value: the sum of kept dice, or the number of successes.
    pub value: i64,
}

/// A whole roll.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outcome {
    pub expression: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub total: i64,
    pub rolls: Vec<TermRoll>,
}

impl Outcome {
    /// One readable line: `4d6kh3: [6, 5, 3, (1)] = 14` (dropped dice in parentheses).
    pub fn line(&self) -> String {
        let terms: Vec<String> = self
            .rolls
            .iter()
            .map(|term| {
                let dice: Vec<String> = term
                    .dice
                    .iter()
                    .map(|die| {
                        let mark = if die.success == Some(true) { "*" } else { "" };
                        if die.kept {
                            format!("{}{mark}", die.value)
                        } else {
                            format!("({})", die.value)
                        }
                    })
                    .collect();
                format!("{} [{}]", term.term, dice.join(", "))
            })
            .collect();
        let label = self
            .label
            .as_ref()
            .map_or(String::new(), |l| format!(" # {l}"));
        format!(
            "{} → {} = {}{label}",
            self.expression.trim(),
            terms.join(" "),
            self.total
        )
    }
}

struct Roller<'r, R: Rng> {
    rng: &'r mut R,
    rolled: u64,
    terms: Vec<TermRoll>,
}

/// Rolls a parsed expression.
pub fn roll<R: Rng>(expression: &str, parsed: &Roll, rng: &mut R) -> Result<Outcome, DiceError> {
    let mut roller = Roller {
        rng,
        rolled: 0,
        terms: Vec::new(),
    };
    let total = roller.eval(&parsed.expr)?;
    Ok(Outcome {
        expression: expression.split('#').next().unwrap_or("").trim().to_owned(),
        label: parsed.label.clone(),
        total,
        rolls: roller.terms,
    })
}

fn overflow() -> DiceError {
    DiceError::at(0, "the result is too large")
}

/// Whether `rule` holds for every face from `low` to `high` (rules are monotone or equality).
fn covers_all(rule: Compare, low: i64, high: i64) -> bool {
    match rule {
        Compare::Equal(n) => low == high && n == low,
        _ => rule.holds(low) && rule.holds(high),
    }
}

impl<R: Rng> Roller<'_, R> {
    fn eval(&mut self, expr: &Expr) -> Result<i64, DiceError> {
        match expr {
            Expr::Number(n) => Ok(*n),
            Expr::Negate(inner) => self.eval(inner)?.checked_neg().ok_or_else(overflow),
            Expr::Binary(left, op, right) => {
                let (a, b) = (self.eval(left)?, self.eval(right)?);
                match op {
                    Op::Add => a.checked_add(b),
                    Op::Subtract => a.checked_sub(b),
                    Op::Multiply => a.checked_mul(b),
                    Op::Divide => {
                        if b == 0 {
                            return Err(DiceError::at(0, "division by zero"));
                        }
                        // Rounds down (toward negative infinity), as tabletop rules do.
                        a.checked_div(b).map(|q| {
                            if a % b != 0 && ((a < 0) != (b < 0)) {
                                q - 1
                            } else {
                                q
                            }
                        })
                    }
                }
                .ok_or_else(overflow)
            }
            Expr::Dice(dice) => self.dice(dice),
        }
    }

    fn face(&mut self, sides: Sides) -> Result<i64, DiceError> {
        self.rolled += 1;
        if self.rolled > MAX_DICE {
            return Err(DiceError::at(
                0,
                format!(
                    "this roll needs more than {MAX_DICE} dice (explosions and rerolls included)"
                ),
            ));
        }
        Ok(match sides {
            Sides::Number(n) => i64::try_from(self.rng.random_range(1..=n)).unwrap_or(i64::MAX),
            Sides::Fudge => self.rng.random_range(-1..=1),
        })
    }

    fn dice(&mut self, dice: &Dice) -> Result<i64, DiceError> {
        let (low, high) = match dice.sides {
            Sides::Number(n) => (1, i64::try_from(n).unwrap_or(i64::MAX)),
            Sides::Fudge => (-1, 1),
        };
        if let Some((rule, false)) = dice.reroll
            && covers_all(rule, low, high)
        {
            return Err(DiceError::at(
                0,
                format!("{}: the reroll condition matches every face", dice.text),
            ));
        }
        if let Some(rule) = dice.explode
            && covers_all(rule, low, high)
        {
            return Err(DiceError::at(
                0,
                format!("{}: this die would explode on every roll", dice.text),
            ));
        }
        let mut rolled = Vec::new();
        let mut pending = dice.count;
        let mut from_explosion = false;
        while pending > 0 {
            pending -= 1;
            let mut value = self.face(dice.sides)?;
            let mut rerolled = Vec::new();
            if let Some((rule, once)) = dice.reroll {
                while rule.holds(value) {
                    rerolled.push(value);
                    value = self.face(dice.sides)?;
                    if once {
                        break;
                    }
                }
            }
            if dice.explode.is_some_and(|rule| rule.holds(value)) {
                pending += 1;
            }
            rolled.push(Die {
                value,
                kept: true,
                from_explosion,
                rerolled,
                success: None,
            });
            from_explosion = dice.explode.is_some_and(|rule| rule.holds(value));
        }
        if let Some(keep) = dice.keep {
            let mut order: Vec<usize> = (0..rolled.len()).collect();
            order.sort_by_key(|&i| rolled[i].value);
            let n = rolled.len();
            let count = |k: u64| usize::try_from(k).unwrap_or(usize::MAX).min(n);
            let dropped: Vec<usize> = match keep {
                Keep::Highest(k) => order[..n - count(k)].to_vec(),
                Keep::Lowest(k) => order[count(k)..].to_vec(),
                Keep::DropHighest(k) => order[n - count(k)..].to_vec(),
                Keep::DropLowest(k) => order[..count(k)].to_vec(),
            };
            for i in dropped {
                rolled[i].kept = false;
            }
        }
        let value = match dice.success {
            Some(rule) => {
                let mut successes = 0i64;
                for die in rolled.iter_mut() {
                    let hit = die.kept && rule.holds(die.value);
                    die.success = Some(hit);
                    successes += i64::from(hit);
                }
                successes
            }
            None => rolled
                .iter()
                .filter(|die| die.kept)
                .try_fold(0i64, |sum, die| sum.checked_add(die.value))
                .ok_or_else(overflow)?,
        };
        self.terms.push(TermRoll {
            term: dice.text.clone(),
            dice: rolled,
            value,
        });
        Ok(value)
    }
}
