/** The sign-in card of the dashboard and the partner portal: email, password, one button. */
import { escapeHtml, type PropsWithChildren } from '@kitajs/html';
import type { Flash } from '../session.js';
import { CsrfField } from './components.js';
import { FlashMessage } from './layout.js';

export interface SignInProps {
  heading: string;
  action: string;
  csrfToken: string;
  email?: string | undefined;
  /** Where to go after signing in (the dashboard's `next`); none on the portal. */
  next?: string | undefined;
  message?: Flash | null | undefined;
  /** The email and password were refused: both fields are marked invalid and described by the message. */
  refused?: boolean;
}

const ERROR_ID = 'sign-in-error';

/** The children say what to do without an account or password. */
export function SignInCard({ children, ...props }: PropsWithChildren<SignInProps>) {
  return (
    <div class="login">
      <h1 safe>{props.heading}</h1>
      <FlashMessage flash={props.message} id={ERROR_ID} />
      <form method="post" action={props.action} class="stack" novalidate>
        <CsrfField token={props.csrfToken} />
        {props.next === undefined ? '' : <input type="hidden" name="next" value={escapeHtml(props.next)} />}
        <div>
          <label for="email">Email</label>
          <input
            id="email"
            name="email"
            type="email"
            autocomplete="username"
            required
            value={escapeHtml(props.email ?? '')}
            aria-invalid={props.refused ? 'true' : undefined}
            aria-describedby={props.refused ? ERROR_ID : undefined}
            autofocus
          />
        </div>
        <div>
          <label for="password">Password</label>
          <input
            id="password"
            name="password"
            type="password"
            autocomplete="current-password"
            required
            aria-invalid={props.refused ? 'true' : undefined}
            aria-describedby={props.refused ? ERROR_ID : undefined}
          />
        </div>
        <div>
          <button type="submit">Sign in</button>
        </div>
      </form>
      <p class="hint">{children}</p>
    </div>
  );
}
