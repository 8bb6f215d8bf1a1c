//! Reading a program's arguments the way `getopt_long` does, from a table of its options.
//!
//! A check of "does this command write?" that compares argument text with option names
//! misses what the program itself accepts: GNU programs take any unique prefix of a long
//! option (`sort --outp=f` is `--output=f`), short options cluster (`sort -uo f` is
//! `-u -o f`), and an option that takes a value swallows the rest of its cluster or the
//! next word (`sort -to` sets the separator to `o`; it writes nothing). So the programs
//! whose options matter are described by data ([`OptionTable`]: every short and long
//! option, allowed or not, with whether it takes a value) and their arguments are read
//! here into options and operands, as the program will read them. Anything the program
//! would reject (an unknown or ambiguous option, a missing value) is an error: the
//! caller treats the command as one it cannot vouch for.

/// Whether an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arg {
    /// No value (`--count`, `-c`).
    None,
    /// A value, attached or in the next word (`--output=f`, `--output f`, `-of`, `-o f`).
    Required,
    /// A value only when attached (`--in-place=.bak`, `-i.bak`).
    Optional,
}

/// A program's options, as its `getopt_long` call declares them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OptionTable {
    /// The short options: each letter with its [`Arg`].
    pub short: &'static [(char, Arg)],
    /// The long options (without `--`), each with its [`Arg`] and the short option it
    /// is the same as, if any.
    pub long: &'static [(&'static str, Arg, Option<char>)],
    /// Options end at the first operand (`env`, `xargs`, `timeout`: what follows is the
    /// command they run); otherwise options and operands mix, as GNU programs permute.
    pub stop_at_operand: bool,
}

/// One option as the program reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Opt {
    /// The short letter (also set for a long option that has one).
    pub short: Option<char>,
    /// The full long name (also set for a short option that has one).
    pub long: Option<&'static str>,
    /// The value, attached or taken from the next word.
    pub value: Option<String>,
}

impl Opt {
    /// Whether this is the option `-short` / `--long` (either may be absent from the
    /// table; pass `'\0'` or `""` for "none").
    pub(crate) fn is(&self, short: char, long: &str) -> bool {
        self.short == Some(short) || self.long == Some(long)
    }
}

/// What the arguments are: options in order, then operands (with their positions among
/// the arguments, so a caller can find the command a wrapper runs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Parsed {
    /// The options.
    pub options: Vec<Opt>,
    /// The operands (everything that is not an option or an option's value).
    pub operands: Vec<String>,
    /// With [`OptionTable::stop_at_operand`]: the index in the arguments of the first
    /// operand, where the wrapped command starts.
    pub first_operand: Option<usize>,
}

/// Why the program would reject its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GetoptError {
    /// No option of that name (or letter).
    Unknown(String),
    /// A prefix of several long options.
    Ambiguous(String),
    /// An option that needs a value has none.
    MissingValue(String),
    /// `--flag=value` for an option without values.
    UnexpectedValue(String),
}

impl std::fmt::Display for GetoptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GetoptError::Unknown(o) => write!(f, "unknown option {o}"),
            GetoptError::Ambiguous(o) => write!(f, "ambiguous option {o}"),
            GetoptError::MissingValue(o) => write!(f, "option {o} needs a value"),
            GetoptError::UnexpectedValue(o) => write!(f, "option {o} takes no value"),
        }
    }
}

impl OptionTable {
    /// Reads `args` (the words after the program name).
    pub(crate) fn parse(&self, args: &[String]) -> Result<Parsed, GetoptError> {
        let mut parsed = Parsed::default();
        let mut i = 0;
        while let Some(arg) = args.get(i) {
            i += 1;
            if arg == "--" {
                if self.stop_at_operand {
                    parsed.first_operand = Some(i).filter(|i| *i < args.len());
                }
                parsed.operands.extend(args[i..].iter().cloned());
                break;
            }
            if let Some(long) = arg.strip_prefix("--") {
                i += self.long_option(long, args.get(i), &mut parsed)?;
            } else if arg.len() > 1 && arg.starts_with('-') {
                i += self.short_cluster(&arg[1..], args.get(i), &mut parsed)?;
            } else if self.stop_at_operand {
                parsed.first_operand = Some(i - 1);
                parsed.operands.extend(args[i - 1..].iter().cloned());
                break;
            } else {
                parsed.operands.push(arg.clone());
            }
        }
        Ok(parsed)
    }

    /// The long option `--text`; returns how many of the following words it used.
    fn long_option(
        &self,
        text: &str,
        next: Option<&String>,
        parsed: &mut Parsed,
    ) -> Result<usize, GetoptError> {
        let (name, value) = match text.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (text, None),
        };
        let (long, arg, short) = self.resolve_long(name)?;
        let (value, used) = match (arg, value) {
            (Arg::None, Some(_)) => return Err(GetoptError::UnexpectedValue(format!("--{long}"))),
            (Arg::Required, None) => match next {
                Some(v) => (Some(v.clone()), 1),
                None => return Err(GetoptError::MissingValue(format!("--{long}"))),
            },
            (_, value) => (value, 0),
        };
        parsed.options.push(Opt {
            short,
            long: Some(long),
            value,
        });
        Ok(used)
    }

    /// An exact name wins; otherwise the one long option `name` is a prefix of.
    pub(crate) fn resolve_long(
        &self,
        name: &str,
    ) -> Result<(&'static str, Arg, Option<char>), GetoptError> {
        if name.is_empty() {
            return Err(GetoptError::Unknown("--".to_string()));
        }
        if let Some(exact) = self.long.iter().find(|(n, _, _)| *n == name) {
            return Ok(*exact);
        }
        let mut matches = self.long.iter().filter(|(n, _, _)| n.starts_with(name));
        match (matches.next(), matches.next()) {
            (Some(only), None) => Ok(*only),
            (Some(_), Some(_)) => Err(GetoptError::Ambiguous(format!("--{name}"))),
            (None, _) => Err(GetoptError::Unknown(format!("--{name}"))),
        }
    }

    /// The short options of one cluster (`-uo` without its dash); returns how many of
    /// the following words it used.
    fn short_cluster(
        &self,
        cluster: &str,
        next: Option<&String>,
        parsed: &mut Parsed,
    ) -> Result<usize, GetoptError> {
        for (at, letter) in cluster.char_indices() {
            let Some((_, arg)) = self.short.iter().find(|(c, _)| *c == letter) else {
                return Err(GetoptError::Unknown(format!("-{letter}")));
            };
            let long = self
                .long
                .iter()
                .find(|(_, _, s)| *s == Some(letter))
                .map(|(n, _, _)| *n);
            let rest = &cluster[at + letter.len_utf8()..];
            let (value, used, done) = match arg {
                Arg::None => (None, 0, false),
                Arg::Optional => (Some(rest.to_string()).filter(|r| !r.is_empty()), 0, true),
                Arg::Required if !rest.is_empty() => (Some(rest.to_string()), 0, true),
                Arg::Required => match next {
                    Some(v) => (Some(v.clone()), 1, true),
                    None => return Err(GetoptError::MissingValue(format!("-{letter}"))),
                },
            };
            parsed.options.push(Opt {
                short: Some(letter),
                long,
                value,
            });
            if done {
                return Ok(used);
            }
        }
        Ok(0)
    }
}

/// Whether `name` (without `--`) could be read as the long option `option` by a parser
/// that accepts unique prefixes: it is `option` or a prefix of it. For programs whose
/// whole table is not written down here, a prefix of a forbidden option is taken as it
/// (an ambiguous prefix only makes the program fail, so nothing is lost).
pub(crate) fn may_abbreviate(name: &str, option: &str) -> bool {
    let name = name.split_once('=').map_or(name, |(n, _)| n);
    !name.is_empty() && option.starts_with(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SORTISH: OptionTable = OptionTable {
        short: &[('u', Arg::None), ('o', Arg::Required), ('t', Arg::Required)],
        long: &[
            ("unique", Arg::None, Some('u')),
            ("output", Arg::Required, Some('o')),
            ("field-separator", Arg::Required, Some('t')),
            ("files0-from", Arg::Required, None),
        ],
        stop_at_operand: false,
    };

    fn args(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_string).collect()
    }

    fn output_of(line: &str) -> Result<Option<String>, GetoptError> {
        let parsed = SORTISH.parse(&args(line))?;
        Ok(parsed
            .options
            .iter()
            .find(|o| o.is('o', "output"))
            .and_then(|o| o.value.clone()))
    }

    #[test]
    fn long_options_resolve_by_unique_prefix() {
        assert_eq!(output_of("--o=f a"), Ok(Some("f".into())));
        assert_eq!(output_of("--outp=f a"), Ok(Some("f".into())));
        assert_eq!(output_of("--output f a"), Ok(Some("f".into())));
        assert_eq!(output_of("a --ou f"), Ok(Some("f".into())));
        assert_eq!(
            output_of("--f=x a"),
            Err(GetoptError::Ambiguous("--f".into()))
        );
        assert_eq!(output_of("--x a"), Err(GetoptError::Unknown("--x".into())));
        assert_eq!(
            output_of("--unique=1"),
            Err(GetoptError::UnexpectedValue("--unique".into()))
        );
    }

    #[test]
    fn short_clusters_are_read_letter_by_letter() {
        assert_eq!(output_of("-uo f a"), Ok(Some("f".into())));
        assert_eq!(output_of("-uof a"), Ok(Some("f".into())));
        assert_eq!(output_of("-to a"), Ok(None), "o is the separator");
        assert_eq!(output_of("-t -o a"), Ok(None), "-o is the separator");
        assert_eq!(output_of("-- -o f"), Ok(None), "operands after --");
        assert_eq!(
            output_of("-uo"),
            Err(GetoptError::MissingValue("-o".into()))
        );
        assert_eq!(output_of("-ux"), Err(GetoptError::Unknown("-x".into())));
    }

    #[test]
    fn a_prefix_of_a_forbidden_option_is_taken_as_it() {
        assert!(may_abbreviate("ope", "open-files-in-pager"));
        assert!(may_abbreviate("ope=less", "open-files-in-pager"));
        assert!(!may_abbreviate("", "output"));
        assert!(!may_abbreviate("outputs", "output"));
    }
}
