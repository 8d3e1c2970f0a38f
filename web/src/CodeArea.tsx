// CodeArea: a textarea for a command, script, SQL or body, highlighted by
// Prism in a copy drawn under it. The textarea stays the control (its
// label, its value, the browser's editing); the copy is aria-hidden. Only
// classes are used, so the page's CSP (no inline style) holds.
import {useMemo} from 'react';
import Prism from 'prismjs';
import 'prismjs/components/prism-bash';
import 'prismjs/components/prism-python';
import 'prismjs/components/prism-sql';
import 'prismjs/components/prism-json';

export type CodeLang = 'bash' | 'python' | 'sql' | 'json' | 'text';

interface Props { id: string; value: string; lang: CodeLang; rows: number; invalid?: boolean; onChange: (v: string) => void }

export function CodeArea({id, value, lang, rows, invalid, onChange}: Props) {
  const html = useMemo(() => {
    const g = Prism.languages[lang];
    // The trailing newline keeps the copy as tall as the text when it ends in one.
    return (g ? Prism.highlight(value, g, lang) : Prism.util.encode(value) as string) + '\n ';
  }, [value, lang]);
  return (
    <div className={`codearea rows-${Math.min(rows, 12)}`} data-lang={lang}>
      <pre aria-hidden="true" className={`language-${lang}`} dangerouslySetInnerHTML={{__html: html}} />
      <textarea id={id} className="code" spellCheck={false} value={value} aria-invalid={invalid}
        autoCapitalize="off" autoComplete="off" onChange={(e) => onChange(e.target.value)} />
    </div>
  );
}
