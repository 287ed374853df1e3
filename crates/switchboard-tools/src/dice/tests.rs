//! The grammar, the rolling rules, the limits and the tables; property tests for bounds and
//! keep/drop counts, and that no input makes the parser panic.

use proptest::prelude::*;

use super::*;

fn seeded(seed: u64) -> Dice {
    Dice::new(DiceSettings {
        tables_dir: None,
        seed: Some(seed),
    })
}

fn error(expression: &str) -> String {
    seeded(1)
        .roll(expression)
        .expect_err(expression)
        .to_string()
}

#[test]
fn arithmetic_has_precedence_and_parentheses() {
    let dice = seeded(1);
    for (expression, total) in [
        ("2+3*4", 14),
        ("(2+3)*4", 20),
        ("10-2-3", 5),
        ("-3+10", 7),
        ("7/2", 3),
        ("-7/2", -4),
        ("7/-2", -4),
        ("2*-(3+1)", -8),
        ("42", 42),
    ] {
        assert_eq!(
            dice.roll(expression).expect(expression).total,
            total,
            "{expression}"
        );
    }
}

#[test]
fn every_modifier_does_what_it_says() {
    let dice = seeded(7);
    let kept = |outcome: &roll::Outcome| outcome.rolls[0].dice.iter().filter(|d| d.kept).count();
    let four = dice.roll("4d6kh3").expect("kh");
    assert_eq!((four.rolls[0].dice.len(), kept(&four)), (4, 3));
    let smallest = four.rolls[0]
        .dice
        .iter()
        .map(|d| d.value)
        .min()
        .unwrap_or(0);
    assert_eq!(
        four.total,
        four.rolls[0].dice.iter().map(|d| d.value).sum::<i64>() - smallest
    );
    assert_eq!(kept(&dice.roll("2d20kl1").expect("kl")), 1);
    assert_eq!(kept(&dice.roll("4d6dl1").expect("dl")), 3);
    assert_eq!(
        kept(&dice.roll("4d6d1").expect("d")),
        3,
        "a bare d after dice drops the lowest"
    );
    assert_eq!(kept(&dice.roll("5d6dh2").expect("dh")), 3);
    let advantage = dice.roll("d20 adv").expect("adv");
    assert_eq!(advantage.rolls[0].dice.len(), 2);
    assert_eq!(
        advantage.total,
        advantage.rolls[0]
            .dice
            .iter()
            .map(|d| d.value)
            .max()
            .unwrap_or(0)
    );
    let disadvantage = dice.roll("1d20dis+5").expect("dis");
    let low = disadvantage.rolls[0]
        .dice
        .iter()
        .map(|d| d.value)
        .min()
        .unwrap_or(0);
    assert_eq!(disadvantage.total, low + 5);
    let percent = dice.roll("d%").expect("d%");
    assert!((1..=100).contains(&percent.total));
    for _ in 0..50 {
        let fudge = dice.roll("4dF").expect("dF");
        assert!((-4..=4).contains(&fudge.total));
        assert!(
            fudge.rolls[0]
                .dice
                .iter()
                .all(|d| (-1..=1).contains(&d.value))
        );
    }
    for _ in 0..50 {
        let successes = dice.roll("5d10>=8").expect(">=");
        let counted = successes.rolls[0]
            .dice
            .iter()
            .filter(|d| d.value >= 8)
            .count() as i64;
        assert_eq!(successes.total, counted);
        let rerolled = dice.roll("4d6r1").expect("r");
        assert!(
            rerolled.rolls[0].dice.iter().all(|d| d.value != 1),
            "r1 rerolls every 1"
        );
        let once = dice.roll("10d6ro<3").expect("ro");
        assert!(
            once.rolls[0].dice.iter().all(|d| d.rerolled.len() <= 1),
            "ro rerolls once"
        );
        let exploded = dice.roll("3d6!").expect("!");
        let dice_rolled = &exploded.rolls[0].dice;
        let sixes = dice_rolled.iter().filter(|d| d.value == 6).count();
        assert_eq!(dice_rolled.len(), 3 + sixes, "one extra die per 6");
    }
}

#[test]
fn labels_and_the_readable_line() {
    let outcome = seeded(3).roll("1d20+5 # attack").expect("ok");
    assert_eq!(outcome.label.as_deref(), Some("attack"));
    assert_eq!(outcome.expression, "1d20+5");
    let line = outcome.line();
    assert!(
        line.starts_with("1d20+5 → 1d20 [")
            && line.ends_with(&format!("= {} # attack", outcome.total)),
        "{line}"
    );
    let dropped = seeded(3).roll("4d6kh3").expect("ok").line();
    assert_eq!(
        dropped.matches('(').count(),
        1,
        "the dropped die is in parentheses: {dropped}"
    );
}

#[test]
fn errors_name_the_column() {
    assert_eq!(error("4d6kh"), "expected a number after kh at column 6");
    assert_eq!(
        error("2d"),
        "expected the number of sides after d (d6, d%, dF) at column 3"
    );
    assert_eq!(error("(1d6"), "expected ')' at column 5");
    assert_eq!(error("1d6 $"), "unexpected '$' at column 5");
    assert_eq!(
        error(""),
        "the expression is empty: write e.g. \"1d20+5\" at column 1"
    );
    assert_eq!(error("3 +"), "the expression ends too early at column 4");
    assert_eq!(
        error("1d6kh1kl1"),
        "only one keep or drop per dice term at column 10"
    );
    assert!(error("1/0").contains("division by zero"));
    assert!(error("1d1!").contains("explode on every roll"));
    assert!(error("1d6r<7").contains("matches every face"));
}

/// Regression: "1d6 d6" was read as 1d6 drop-lowest-6 (a silent 0); a bare `d` drops only
/// directly after its dice term, so two dice terms without an operator are refused.
#[test]
fn two_dice_terms_without_an_operator_are_refused() {
    for (expression, column) in [("1d6 d6", 5), ("4d6 d1", 5), ("2d20 d20 + 1", 6)] {
        let message = error(expression);
        assert_eq!(
            message,
            format!("unexpected 'd' at column {column}"),
            "{expression}"
        );
    }
    let dice = seeded(3);
    let kept = |expression: &str| {
        let outcome = dice.roll(expression).expect(expression);
        outcome.rolls[0].dice.iter().filter(|d| d.kept).count()
    };
    assert_eq!(kept("4d6d1"), 3, "a bare d directly after the term drops");
    assert_eq!(kept("4d6 dl1"), 3, "a named drop may follow a space");
}

#[test]
fn limits_keep_every_roll_cheap() {
    assert_eq!(error("1001d6"), "at most 1000 dice per roll at column 1");
    assert_eq!(
        error("1d1000001"),
        "a die has at most 1000000 sides at column 1"
    );
    assert!(error("0d6").contains("at least one die"));
    assert!(
        error("999d2!").contains("more than 1000 dice"),
        "explosions count"
    );
    assert!(error("99999999999999999999").contains("too large"));
    assert!(error("9223372036854775807*2").contains("too large"));
    let deep = format!("{}1{}", "(".repeat(40), ")".repeat(40));
    assert!(error(&deep).contains("nested more than 32 deep"));
    let long = "1+".repeat(600) + "1";
    assert!(error(&long).contains("longer than 1000 characters"));
    assert!(seeded(1).roll("1000d1000000").is_ok());
}

#[test]
fn seeded_rolls_repeat_and_os_rolls_vary() {
    let a: Vec<i64> = (0..20)
        .map(|_| 0)
        .scan(seeded(42), |d, _| d.roll("3d20").ok().map(|o| o.total))
        .collect();
    let b: Vec<i64> = (0..20)
        .map(|_| 0)
        .scan(seeded(42), |d, _| d.roll("3d20").ok().map(|o| o.total))
        .collect();
    assert_eq!(a, b);
    let random = Dice::new(DiceSettings::default());
    let totals: std::collections::BTreeSet<i64> = (0..50)
        .filter_map(|_| random.roll("1d1000").ok())
        .map(|o| o.total)
        .collect();
    assert!(totals.len() > 10, "OS randomness varies");
}

#[test]
fn tables_in_toml_and_csv() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("weather.toml"),
        "description = \"Road weather\"\n[[entries]]\nweight = 1000000\nresult = \"Clear\"\n[[entries]]\nresult = \"Storm\"\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("loot.csv"),
        "weight,result\n1,\"Gold, 10 pieces\"\n# comment\n0,Nothing\n",
    )
    .expect("write");
    std::fs::write(dir.path().join("bad.toml"), "[[entries]]\nresult = 3\n").expect("write");
    let dice = Dice::new(DiceSettings {
        tables_dir: Some(dir.path().to_owned()),
        seed: Some(1),
    });
    let listed = tables::list(dir.path()).expect("list");
    assert_eq!(listed.len(), 3);
    assert!(
        listed[0].as_ref().expect_err("bad").contains("bad.toml:2"),
        "{:?}",
        listed[0]
    );
    assert!(
        listed[1]
            .as_ref()
            .expect_err("zero weight")
            .contains("weight 0")
    );
    let weather = tables::load(dir.path(), "weather").expect("weather");
    assert_eq!(weather.description.as_deref(), Some("Road weather"));
    let mut rng = StdRng::seed_from_u64(9);
    let clear = (0..200)
        .filter(|_| weather.draw(&mut rng).result == "Clear")
        .count();
    assert!(clear >= 199, "weights are honoured: {clear}");
    for name in ["../weather", "/etc/passwd", ".hidden", "a/b"] {
        assert!(
            tables::load(dir.path(), name)
                .expect_err(name)
                .contains("not a table name")
        );
    }
    assert!(
        tables::load(dir.path(), "missing")
            .expect_err("missing")
            .contains("no table 'missing'")
    );
    let drawn = dice
        .call_roll_table(
            &json!({"table": "weather", "count": 3})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        )
        .expect("drawn");
    assert_eq!(
        drawn.structured_content.expect("structured")["results"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );
}

proptest! {
    #[test]
    fn totals_stay_within_bounds(count in 1u64..20, sides in 1u64..100, constant in -50i64..50, seed: u64) {
        let expression = format!("{count}d{sides}+{constant}");
        let outcome = seeded(seed).roll(&expression).expect("valid");
        let (low, high) = (count as i64 + constant, (count * sides) as i64 + constant);
        prop_assert!(outcome.total >= low && outcome.total <= high, "{} not in {}..={}", outcome.total, low, high);
    }

    #[test]
    fn keep_and_drop_keep_the_right_number(count in 1u64..30, keep in 0u64..40, seed: u64) {
        for (modifier, expected) in [
            ("kh", keep.min(count)),
            ("kl", keep.min(count)),
            ("dh", count - keep.min(count)),
            ("dl", count - keep.min(count)),
        ] {
            let outcome = seeded(seed).roll(&format!("{count}d6{modifier}{keep}")).expect("valid");
            let kept = outcome.rolls[0].dice.iter().filter(|d| d.kept).count() as u64;
            prop_assert_eq!(kept, expected, "{}{}", modifier, keep);
            let kept_sum: i64 = outcome.rolls[0].dice.iter().filter(|d| d.kept).map(|d| d.value).sum();
            prop_assert_eq!(kept_sum, outcome.total);
        }
    }

    #[test]
    fn no_input_panics(input in ".{0,64}") {
        let _ = seeded(0).roll(&input);
    }

    #[test]
    fn no_dice_shaped_input_panics(input in "[0-9dDkhlrF%!<>=()+*/# -]{0,40}") {
        let _ = seeded(0).roll(&input);
    }
}
