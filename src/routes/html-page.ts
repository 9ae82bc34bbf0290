import type { FastifyReply } from 'fastify'

/**
 * The pages a mailed link opens (/verify-email, /reset-password): plain HTML with no script, style
 * or image, so the content security policy allows nothing but posting the form back to Roja.
 */
export function page (reply: FastifyReply, status: number, title: string, body: string): FastifyReply {
  return reply.code(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('content-security-policy', "default-src 'none'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
    .send(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${title} | Roja</title></head>
<body>
<h1>${title}</h1>
${body}
</body>
</html>
`)
}

export function escapeHtml (text: string): string {
  return text.replace(/[&<>"']/g, c => `&#${c.charCodeAt(0)};`)
}
