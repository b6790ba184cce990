/** Sends a rendered page: the doctype, then the element's markup. */
import type { FastifyReply } from 'fastify';

export async function sendPage(
  reply: FastifyReply,
  page: JSX.Element,
  status = reply.statusCode,
): Promise<FastifyReply> {
  // Components may be async (kitajs renders them to a Promise); ours are not yet.
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .send(`<!doctype html>${await page}`);
}
