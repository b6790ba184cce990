// The baseline: a bare node:http server answering a fixed JSON body (or a fixed 302).
import http from 'node:http';

const body = process.env.BARE_BODY ?? '{}';
const location = process.env.BARE_LOCATION;
http
  .createServer((req, res) => {
    if (location && req.url !== '/health') {
      res.writeHead(302, { location, 'content-length': '0' });
      res.end();
      return;
    }
    res.writeHead(200, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
    });
    res.end(body);
  })
  .listen(Number(process.env.BARE_PORT), '127.0.0.1');
