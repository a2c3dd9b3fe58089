import { useEffect, useRef, useState } from 'preact/hooks';
import { api, containerPath } from './api.ts';

interface ExecOperation {
  id: string;
  metadata: { fds: Record<string, string> };
}

/**
 * A shell in the container: POST .../exec (interactive, waiting for its websockets), then xterm on the
 * data socket (binary frames both ways) and window sizes on the control socket, as `lxc exec` does.
 */
export function Terminal({ name }: { name: string }) {
  const box = useRef<HTMLElement>(null);
  const [open, setOpen] = useState(false);
  const [status, setStatus] = useState('');
  useEffect(() => {
    if (!open || !box.current) return;
    const el = box.current;
    const sockets: WebSocket[] = [];
    let closed = false;
    let dispose = () => {};
    let fitNow = () => {};
    void (async () => {
      // xterm is two thirds of the dashboard's code: loaded only when a terminal opens.
      const [{ Terminal: XTerm }, { FitAddon }] = await Promise.all([
        import('@xterm/xterm'),
        import('@xterm/addon-fit'),
      ]);
      if (closed) return;
      const term = new XTerm({ cols: 80, rows: 24, convertEol: false, fontSize: 13 });
      const fit = new FitAddon();
      term.loadAddon(fit);
      term.open(el);
      dispose = () => term.dispose();
      fitNow = () => {
        try {
          fit.fit();
        } catch {
          /* not laid out: the size stays */
        }
      };
      fitNow();
      setStatus('Starting a shell…');
      const r = await api<ExecOperation>('POST', containerPath(name, '/exec'), {
        command: ['/bin/sh', '-l'],
        environment: { TERM: 'xterm-256color', HOME: '/root' },
        'wait-for-websocket': true,
        interactive: true,
        width: term.cols,
        height: term.rows,
      });
      if (!r.ok || closed) return setStatus(r.error || '');
      const { id, metadata } = r.data;
      const url = (fd: string) =>
        `wss://${location.host}/1.0/operations/${encodeURIComponent(id)}/websocket?secret=${encodeURIComponent(metadata.fds[fd] ?? '')}`;
      const data = new WebSocket(url('0'));
      data.binaryType = 'arraybuffer';
      const control = new WebSocket(url('control'));
      sockets.push(data, control);
      const enc = new TextEncoder();
      data.onopen = () => {
        setStatus('Connected');
        term.focus();
      };
      data.onmessage = (m) => {
        if (m.data instanceof ArrayBuffer) term.write(new Uint8Array(m.data));
        else if (m.data) term.write(String(m.data));
      };
      data.onclose = () => setStatus('The shell ended.');
      term.onData((d) => data.readyState === WebSocket.OPEN && data.send(enc.encode(d)));
      term.onResize(({ cols, rows }) => {
        if (control.readyState === WebSocket.OPEN)
          control.send(
            JSON.stringify({ command: 'window-resize', args: { width: String(cols), height: String(rows) } }),
          );
      });
    })();
    const onResize = () => fitNow();
    addEventListener('resize', onResize);
    return () => {
      closed = true;
      removeEventListener('resize', onResize);
      for (const s of sockets) s.close();
      dispose();
    };
  }, [open, name]);
  return (
    <div>
      <button type="button" onClick={() => setOpen(!open)} aria-expanded={open}>
        {open ? 'Close terminal' : 'Open terminal'}
      </button>
      {status ? <span role="status"> {status}</span> : null}
      {open ? <section ref={box} class="terminal" aria-label={`Terminal in ${name}`} /> : null}
    </div>
  );
}
