// CodeArea: a textarea for a command, script, SQL or body, highlighted by
// Prism in a copy drawn under it. The textarea stays the control (its
// label, its value, the browser's editing); the copy is aria-hidden. Prism
// only tokenizes: the tokens become React elements, so no markup string is
// ever injected, and only classes are used, so the page's CSP (no inline
// style) holds.
import {useMemo, type ReactNode} from 'react';
import Prism from 'prismjs';
import 'prismjs/components/prism-bash';
import 'prismjs/components/prism-python';
import 'prismjs/components/prism-sql';
import 'prismjs/components/prism-json';

export type CodeLang = 'bash' | 'python' | 'sql' | 'json' | 'text';

interface Props { id: string; value: string; lang: CodeLang; rows: number; invalid?: boolean; onChange: (v: string) => void }

type Tok = string | Prism.Token;

function render(toks: Tok | Tok[], key = 'k'): ReactNode {
  if (typeof toks === 'string') return toks;
  if (Array.isArray(toks)) return toks.map((t, i) => render(t, `${key}.${i}`));
  const alias = toks.alias ? (Array.isArray(toks.alias) ? toks.alias : [toks.alias]) : [];
  return <span key={key} className={['token', toks.type, ...alias].join(' ')}>{render(toks.content as Tok | Tok[], key)}</span>;
}

export function CodeArea({id, value, lang, rows, invalid, onChange}: Props) {
  const tokens = useMemo(() => {
    const g = Prism.languages[lang];
    return g ? render(Prism.tokenize(value, g)) : value;
  }, [value, lang]);
  return (
    <div className={`codearea rows-${Math.min(rows, 12)}`} data-lang={lang}>
      {/* The trailing newline keeps the copy as tall as the text when it ends in one. */}
      <pre aria-hidden="true" className={`language-${lang}`}>{tokens}{'\n '}</pre>
      <textarea id={id} className="code" spellCheck={false} value={value} aria-invalid={invalid}
        autoCapitalize="off" autoComplete="off" onChange={(e) => onChange(e.target.value)} />
    </div>
  );
}
