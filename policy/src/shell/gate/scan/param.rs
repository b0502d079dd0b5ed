//! `${…}` and arithmetic: what the table admits after `${` and inside `$(( ))` / `(( ))`.

use super::super::Construct;
use super::super::table::{self, Context, Operand};
use super::{Scan, Scanned, outside};

impl Scan<'_> {
    /// `${` … `}` after `${`.
    pub(super) fn param(&mut self) -> Scanned {
        let start = self.i - 2;
        if self.peek() == Some(b'#') {
            // `${#}` is `$#`; `${#name}` is a length.
            self.i += 1;
            if self.peek() == Some(b'}') {
                self.i += 1;
                return Ok(());
            }
            self.parameter(start)?;
            return self.close_param(start);
        }
        if self.peek() == Some(b'!') {
            return Err(outside(start, Construct::ParamOperator));
        }
        self.parameter(start)?;
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(());
        }
        let Some(op) = table::OPERATORS
            .iter()
            .find(|o| self.starts(o.op.as_bytes()))
        else {
            return Err(outside(self.i, Construct::ParamOperator));
        };
        self.i += op.op.len();
        match op.operand {
            Operand::Word => self.operand_word()?,
            Operand::Offset => {
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_digit() || c == b' ' || c == b'-' || c == b':')
                {
                    self.i += 1;
                }
            }
        }
        self.close_param(start)
    }

    fn close_param(&mut self, start: usize) -> Scanned {
        match self.peek() {
            Some(b'}') => {
                self.i += 1;
                Ok(())
            }
            Some(_) => Err(outside(self.i, Construct::ParamOperand)),
            None => Err(outside(start, Construct::Unterminated("${…}"))),
        }
    }

    /// The parameter of `${…}`: a name (with a subscript of digits, `@` or `*`), digits, or a
    /// special parameter.
    fn parameter(&mut self, start: usize) -> Scanned {
        match self.peek() {
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                self.name();
                if self.peek() == Some(b'[') {
                    self.i += 1;
                    let index = self.i;
                    if matches!(self.peek(), Some(b'@' | b'*')) {
                        self.i += 1;
                    } else {
                        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                            self.i += 1;
                        }
                    }
                    if self.i == index || self.peek() != Some(b']') {
                        return Err(outside(index, Construct::ParamSubscript));
                    }
                    self.i += 1;
                }
                Ok(())
            }
            Some(c) if c.is_ascii_digit() => {
                while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.i += 1;
                }
                Ok(())
            }
            Some(b'@' | b'*' | b'#' | b'?' | b'-' | b'$') => {
                self.i += 1;
                Ok(())
            }
            None => Err(outside(start, Construct::Unterminated("${…}"))),
            Some(_) => Err(outside(self.i, Construct::ParamName)),
        }
    }

    /// A word or pattern operand, up to (not including) the closing `}`.
    fn operand_word(&mut self) -> Scanned {
        while let Some(c) = self.peek() {
            match c {
                b'}' => return Ok(()),
                b'$' => {
                    // `$name` or `${name}` only.
                    let at = self.i;
                    self.i += 1;
                    if self.peek() == Some(b'{') {
                        self.i += 1;
                        if !self
                            .peek()
                            .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
                        {
                            return Err(outside(at, Construct::ParamOperand));
                        }
                        self.name();
                        if self.peek() != Some(b'}') {
                            return Err(outside(at, Construct::ParamOperand));
                        }
                        self.i += 1;
                    } else if self
                        .peek()
                        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
                    {
                        self.name();
                    } else {
                        return Err(outside(at, Construct::ParamOperand));
                    }
                }
                c if c >= 0x80
                    || (table::operand_char(c) && table::admits(Context::Operand, c)) =>
                {
                    self.i += 1;
                }
                _ => return Err(outside(self.i, Construct::ParamOperand)),
            }
        }
        Ok(())
    }

    /// The inside of `$(( ))` or `(( ))` after its `((`, through the closing `))`.
    pub(super) fn arithmetic(&mut self, construct: Construct) -> Scanned {
        let start = self.i - 2;
        let mut depth = 0usize;
        loop {
            match self.peek() {
                None => return Err(outside(start, construct)),
                Some(b'(') => {
                    depth += 1;
                    self.i += 1;
                }
                Some(b')') if depth > 0 => {
                    depth -= 1;
                    self.i += 1;
                }
                Some(b')') => {
                    if self.at(1) != Some(b')') {
                        return Err(outside(start, construct));
                    }
                    self.i += 2;
                    return Ok(());
                }
                Some(b'$')
                    if self
                        .at(1)
                        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_') =>
                {
                    self.i += 1;
                    self.name();
                }
                Some(c) if table::arithmetic_char(c) && table::admits(Context::Arithmetic, c) => {
                    self.i += 1;
                }
                Some(_) => return Err(outside(self.i, construct)),
            }
        }
    }
}
