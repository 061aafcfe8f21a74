package dag

import (
	"fmt"
	"strings"
)

// MaxDependsLen is the longest depends expression accepted, in bytes.
const MaxDependsLen = 4096

// Op is an expression node's operator.
type Op string

// Expression operators.
const (
	OpRef Op = "Ref" // a TOKEN
	OpNot Op = "Not"
	OpAnd Op = "And"
	OpOr  Op = "Or"
)

// Expr is a parsed depends expression. Offset is the byte offset of the node
// in the source, for error messages.
type Expr struct {
	Op     Op
	Args   []*Expr // one for OpNot, two or more for OpAnd and OpOr
	Token  string  // OpRef only
	Offset int
}

// String renders the expression fully parenthesised, so that re-parsing it
// gives the same tree.
func (e *Expr) String() string {
	var b strings.Builder
	e.write(&b)
	return b.String()
}

func (e *Expr) write(b *strings.Builder) {
	switch e.Op {
	case OpRef:
		b.WriteString(e.Token)
	case OpNot:
		b.WriteByte('!')
		e.Args[0].write(b)
	default:
		sep := " && "
		if e.Op == OpOr {
			sep = " || "
		}
		b.WriteByte('(')
		for i, a := range e.Args {
			if i > 0 {
				b.WriteString(sep)
			}
			a.write(b)
		}
		b.WriteByte(')')
	}
}

// SyntaxError is a malformed depends expression; it wraps ErrSyntax.
type SyntaxError struct {
	// Offset is the byte offset of the offending input.
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%v at byte %d: %s", ErrSyntax, e.Offset, e.Msg)
}

// Unwrap returns ErrSyntax.
func (e *SyntaxError) Unwrap() error { return ErrSyntax }

// ParseDepends parses an Argo-like depends expression:
//
//	expr  := and { "||" and }
//	and   := unary { "&&" unary }
//	unary := "!" unary | "(" expr ")" | TOKEN
//	TOKEN := [A-Za-z0-9._-]+
//
// Whitespace is ignored. Tokens are not resolved here: the planner looks each
// up as a flow name, else as <flow>.<RESULT>. Errors are *SyntaxError.
func ParseDepends(src string) (*Expr, error) {
	if len(src) > MaxDependsLen {
		return nil, &SyntaxError{Offset: MaxDependsLen, Msg: fmt.Sprintf("expression is %d bytes, over the %d-byte limit", len(src), MaxDependsLen)}
	}
	p := parser{src: src}
	p.next()
	if p.tok == tokEOF {
		return nil, &SyntaxError{Offset: p.pos, Msg: "empty expression"}
	}
	e := p.or()
	if p.err != nil {
		return nil, p.err
	}
	if p.tok != tokEOF {
		return nil, &SyntaxError{Offset: p.pos, Msg: fmt.Sprintf("unexpected %s", p.describe())}
	}
	return e, nil
}

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokIdent
	tokNot
	tokAnd
	tokOr
	tokLParen
	tokRParen
	tokBad
)

type parser struct {
	src  string
	off  int // next byte to scan
	pos  int // offset of the current token
	tok  tokKind
	text string
	err  *SyntaxError
}

func identByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

func (p *parser) next() {
	for p.off < len(p.src) {
		switch p.src[p.off] {
		case ' ', '\t', '\n', '\r':
			p.off++
			continue
		}
		break
	}
	p.pos = p.off
	if p.off >= len(p.src) {
		p.tok, p.text = tokEOF, ""
		return
	}
	c := p.src[p.off]
	two := p.off+1 < len(p.src) && p.src[p.off+1] == c
	switch {
	case c == '!':
		p.tok, p.off = tokNot, p.off+1
	case c == '(':
		p.tok, p.off = tokLParen, p.off+1
	case c == ')':
		p.tok, p.off = tokRParen, p.off+1
	case c == '&' && two:
		p.tok, p.off = tokAnd, p.off+2
	case c == '|' && two:
		p.tok, p.off = tokOr, p.off+2
	case identByte(c):
		start := p.off
		for p.off < len(p.src) && identByte(p.src[p.off]) {
			p.off++
		}
		p.tok, p.text = tokIdent, p.src[start:p.off]
	default:
		p.tok, p.text = tokBad, p.src[p.off:p.off+1]
	}
}

func (p *parser) describe() string {
	switch p.tok {
	case tokEOF:
		return "end of expression"
	case tokIdent:
		return fmt.Sprintf("name %q", p.text)
	case tokNot:
		return `"!"`
	case tokAnd:
		return `"&&"`
	case tokOr:
		return `"||"`
	case tokLParen:
		return `"("`
	case tokRParen:
		return `")"`
	}
	if c := p.text[0]; c == '&' || c == '|' {
		return fmt.Sprintf("single %q (use %q)", c, string([]byte{c, c}))
	}
	return fmt.Sprintf("character %q", p.text)
}

func (p *parser) fail(msg string) *Expr {
	if p.err == nil {
		p.err = &SyntaxError{Offset: p.pos, Msg: msg}
	}
	return nil
}

func (p *parser) or() *Expr {
	start := p.pos
	first := p.and()
	if p.err != nil || p.tok != tokOr {
		return first
	}
	e := &Expr{Op: OpOr, Offset: start, Args: []*Expr{first}}
	for p.tok == tokOr && p.err == nil {
		p.next()
		e.Args = append(e.Args, p.and())
	}
	return e
}

func (p *parser) and() *Expr {
	start := p.pos
	first := p.unary()
	if p.err != nil || p.tok != tokAnd {
		return first
	}
	e := &Expr{Op: OpAnd, Offset: start, Args: []*Expr{first}}
	for p.tok == tokAnd && p.err == nil {
		p.next()
		e.Args = append(e.Args, p.unary())
	}
	return e
}

func (p *parser) unary() *Expr {
	if p.err != nil {
		return nil
	}
	switch p.tok {
	case tokNot:
		start := p.pos
		p.next()
		x := p.unary()
		if p.err != nil {
			return nil
		}
		return &Expr{Op: OpNot, Offset: start, Args: []*Expr{x}}
	case tokLParen:
		open := p.pos
		p.next()
		if p.tok == tokRParen {
			return p.fail("empty parentheses")
		}
		x := p.or()
		if p.err != nil {
			return nil
		}
		if p.tok != tokRParen {
			if p.tok == tokEOF {
				p.pos = open
				return p.fail(`unclosed "("`)
			}
			return p.fail(fmt.Sprintf("unexpected %s, want \")\"", p.describe()))
		}
		p.next()
		return x
	case tokIdent:
		e := &Expr{Op: OpRef, Token: p.text, Offset: p.pos}
		p.next()
		return e
	}
	return p.fail(fmt.Sprintf("unexpected %s, want a name, \"!\" or \"(\"", p.describe()))
}
