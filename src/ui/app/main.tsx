import '@xterm/xterm/css/xterm.css';
import './app.css';
import { render } from 'preact';
import { App } from './app.tsx';

const root = document.getElementById('app');
if (root) {
  root.textContent = '';
  render(<App />, root);
}
