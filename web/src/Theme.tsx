// Light and dark themes: the user's choice, kept in this browser
// (localStorage), else the system's preference. The theme is an attribute
// on <html> (data-theme) that theme.css keys on.
import {useState} from 'react';

type Theme = 'light' | 'dark';
const KEY = 'beluga.theme';

function stored(): Theme | null {
  try {
    const v = localStorage.getItem(KEY);
    return v === 'light' || v === 'dark' ? v : null;
  } catch {
    return null; // storage refused (a private window's policy)
  }
}

// initialTheme is the choice made in this browser, else the system's.
export function initialTheme(): Theme {
  return stored() ?? (window.matchMedia?.('(prefers-color-scheme: dark)').matches ? 'dark' : 'light');
}

export function applyTheme(t: Theme) {
  document.documentElement.dataset.theme = t;
}

// ThemeButton switches between the themes and remembers the choice.
export function ThemeButton() {
  const [theme, setTheme] = useState<Theme>(() => (document.documentElement.dataset.theme as Theme) || 'light');
  const next: Theme = theme === 'dark' ? 'light' : 'dark';
  return (
    <button type="button" className="linkish" id="theme-toggle" aria-pressed={theme === 'dark'}
      title={`Use the ${next} theme`} onClick={() => {
        applyTheme(next);
        setTheme(next);
        try { localStorage.setItem(KEY, next); } catch { /* kept for this page only */ }
      }}>
      {theme === 'dark' ? '☾ Dark' : '☀ Light'}
    </button>
  );
}
