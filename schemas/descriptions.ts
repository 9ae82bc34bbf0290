/**
 * What each operation does, for the OpenAPI documents and the clients made from them: who may call
 * it, what it answers beyond its schema, what it changes. Keyed by operationId, one sentence a
 * line; plugins/openapi.ts gives each route its own.
 */
export const descriptions: Record<string, readonly string[]> = {
  // src/routes/operations.ts
  getHealth: [
    'Anyone, never rate-limited or shed: whether the server and its database answer (503 when the database does not).',
    'Changes nothing.'
  ],
  getVersion: [
    'Anyone: the server\'s version, the API versions it serves and the deployed commit.',
    'Changes nothing.'
  ],
  // src/routes/v1/account.ts
  requestPasswordReset: [
    'Anyone: names an account by `email` or by `username`.',
    'When it is an active account with a verified address, Roja mails that address a link that sets a new password once, within 1 hour; the account\'s earlier links stop working.',
    'The answer is 202 whether or not such an account exists, in about the same time, so it tells nobody whether an address has an account.',
    'Limited per client and per address or username (429), whatever the answer would be.'
  ],
  confirmPasswordReset: [
    'Anyone holding the link: the token of the reset link Roja mailed (its `token` query parameter) and the new password (at least 12 characters).',
    'The password is set and every access token of the account stops working (204); sign in again.',
    'A token works once: used, replaced by a newer link, voided by a password or address change, expired (1 hour) or malformed, it is 422 InvalidResetToken (`errors[0].rule` is `expired` or `invalid`).',
    'Send the token in this body, never in a URL your page builds.'
  ],
  changeMyPassword: [
    'Signed-in users: the current password and a new one (at least 12 characters).',
    'Every access token of the account stops working at once, this one too; the answer is a fresh token.',
    'A verified address gets a notice; pending reset links stop working.',
    'A wrong current password is 403 WrongPassword; every attempt counts toward the sign-in limit of POST /v1/auth/token (AUTH_RATE_LIMIT_MAX per client and username, 429).',
    'The answer is never cached.'
  ],
  changeMyEmail: [
    'Signed-in users: the current password and the new address.',
    'Roja mails the new address a link (as for verification: it opens /verify-email, or EMAIL_VERIFY_URL, and is confirmed through POST /v1/email-verifications); the account keeps its address until the link is confirmed, then has the new one, verified.',
    'A verified current address gets a notice with no link.',
    'An address that belongs to another account gets no mail and the answer is the same 202, so nobody learns whose it is.',
    'Asking again voids the earlier link.',
    'The same address as now is 422.',
    'Counts against the mail limits and, as a password attempt, toward the sign-in limit.'
  ],
  deleteMyTokens: [
    'Signed-in users: every access token of the account issued so far stops working at once, the one sent with this request too (204).',
    'Sign in again for a new one.'
  ],
  deleteMyAccount: [
    'Signed-in users, with the current password in a JSON body: erases the account at once (204) — the profile, posts (with the reviews, comments and alerts on them), the caller\'s reviews and comments, shops and products, classes and students, media (their files too), alerts and the mail queued to the caller.',
    'Other people\'s alerts name the caller as "a former member".',
    'The username is free again.',
    'Nothing can be undone.',
    'A wrong password is 403 WrongPassword; every attempt counts toward the sign-in limit.'
  ],
  // src/routes/v1/alerts.ts
  listAlerts: [
    'Signed-in users: the caller\'s own alerts (reviews and comments others left on their posts), newest first.',
    'Changes nothing.'
  ],
  getAlert: [
    'The alert\'s user only (others 403): one alert.',
    'Changes nothing.'
  ],
  resendAlert: [
    'The alert\'s user only (others 403): queues the alert\'s e-mail again, to the user\'s current address (202); `sent_at` changes once it is delivered.',
    'While that address is unverified: 403 EmailNotVerified, nothing queued.'
  ],
  // src/routes/v1/auth.ts
  createToken: [
    'Anyone with an account: exchanges a username and password for an HS256 bearer token (JSON body, or the RFC 6749 password-grant form).',
    'A wrong username or password is 401, a banned user 403.',
    'Rate-limited per client and username; the answer is never cached.',
    'Changes nothing.'
  ],
  // src/routes/v1/classes.ts
  listClasses: [
    'Any signed-in active user: every class the caller may see, filtered by owner or course.',
    'The classes of a draft or scheduled course are listed to the course\'s creator only (for anyone else they are as absent as those of a missing course).',
    'Changes nothing.'
  ],
  createClass: [
    'Active creators: opens a class, optionally for one of the caller\'s own COURSE posts (another creator\'s published course is 403; an article, a missing course or another creator\'s draft or scheduled course 422, alike).',
    'The caller owns the class.'
  ],
  getClass: [
    'Any signed-in active user: one class; a class of a draft or scheduled course only to the course\'s creator (anyone else 404, as for a missing class).',
    'Changes nothing.'
  ],
  listStudents: [
    'The class owner only (others 403; 404 for a class the caller cannot see): the students of a class, paged by limit/offset or by page/count (not both).',
    'Changes nothing.'
  ],
  createStudent: [
    'The class owner only, while still a creator (others 403; 404 for a class the caller cannot see): adds a student to the class.'
  ],
  getStudent: [
    'The class owner only (others 403; 404 for a class the caller cannot see): one student of the class.',
    'Changes nothing.'
  ],
  updateClass: [
    'The class owner only, while still a creator (others 403; 404 for a class the caller cannot see): replaces its name, course and start date (absent: none).',
    'The course must be one of the caller\'s own, as on create.',
    'A stale If-Match is 412 and changes nothing.'
  ],
  patchClass: [
    'The class owner only, while still a creator: merges a JSON Merge Patch (RFC 7396) into its name, course and start date: a member present replaces the field, null clears course_id or starts_date (on the name it is 422), an absent member is kept.',
    'The merged class must pass the rules of PUT (422) or nothing changes.',
    'A stale If-Match is 412 and changes nothing.'
  ],
  deleteClass: [
    'The class owner only (others 403; 404 for a class the caller cannot see): closes the class and removes its students in the same change.',
    'A stale If-Match is 412 and removes nothing; a second DELETE is 404.'
  ],
  updateStudent: [
    'The class owner only, while still a creator (others 403; 404 for a class the caller cannot see): replaces the student\'s writable fields (an absent last_name or email becomes null).',
    'A stale If-Match is 412 and changes nothing.'
  ],
  patchStudent: [
    'The class owner only, while still a creator: merges a JSON Merge Patch (RFC 7396) into the student\'s fields: a member present replaces the field, null clears last_name or email (on first_name or sex it is 422), an absent member is kept.',
    'The merged student must pass the rules of PUT (422) or nothing changes.',
    'A stale If-Match is 412 and changes nothing.'
  ],
  deleteStudent: [
    'The class owner only (others 403; 404 for a class the caller cannot see): removes the student from the class.',
    'A stale If-Match is 412 and removes nothing; a second DELETE is 404.'
  ],
  // src/routes/v1/comments.ts
  updateComment: [
    'The comment\'s author only (others 403): replaces its text.',
    'A stale If-Match is 412 and changes nothing.'
  ],
  patchComment: [
    'The comment\'s author only (others 403): merges a JSON Merge Patch (RFC 7396): a text present replaces the text, an absent one keeps it, null is 422 (a comment always has text).',
    'A stale If-Match is 412 and changes nothing.'
  ],
  deleteComment: [
    'The comment\'s author only (others 403): deletes the comment.',
    'A stale If-Match is 412 and changes nothing.'
  ],
  listComments: [
    'Anyone for a published post; with a token, the creator of a draft too.',
    'The comments of a post, oldest first.',
    'Changes nothing.'
  ],
  getComment: [
    'Anyone for a published post; with a token, the creator of a draft too.',
    'One comment.',
    'Changes nothing.'
  ],
  createComment: [
    'Any signed-in active user: adds a comment and alerts the post\'s creator (an alert and an e-mail) unless the author is the creator.'
  ],
  // src/routes/v1/courses.ts
  getCourse: [
    'Anyone for a published course; with a token, its creator for a draft too.',
    'The course post with its number of chapters.',
    'Changes nothing.'
  ],
  listChapters: [
    'Anyone for a published course; with a token, its creator for a draft too.',
    'The chapters in position order.',
    'Changes nothing.'
  ],
  getChapter: [
    'Anyone for a published course; with a token, its creator for a draft too.',
    'One chapter.',
    'Changes nothing.'
  ],
  listLessons: [
    'Anyone for a published course; with a token, its creator for a draft too.',
    'The lessons of a chapter in position order.',
    'Changes nothing.'
  ],
  getLesson: [
    'Anyone for a published course; with a token, its creator for a draft too.',
    'One lesson.',
    'Changes nothing.'
  ],
  createChapter: [
    'The course\'s owner only, while still a creator: adds a chapter at the given position (later chapters shift down) or at the end.'
  ],
  createLesson: [
    'The course\'s owner only, while still a creator: adds a lesson to a chapter at the given position (later lessons shift down) or at the end.'
  ],
  updateChapter: [
    'The course\'s owner only, while still a creator (others 403; 404 where the course is hidden from the caller): replaces the title and, with a position, moves the chapter there (the chapters between shift by one; past the end: last; absent: it stays).',
    'A stale If-Match is 412 and changes nothing.'
  ],
  patchChapter: [
    'The course\'s owner only, while still a creator: merges a JSON Merge Patch (RFC 7396): a title present replaces the title, a position moves the chapter (the chapters between shift by one), an absent member is kept; null is 422 on both.',
    'A stale If-Match is 412 and changes nothing.'
  ],
  deleteChapter: [
    'The course\'s owner only (others 403; 404 where the course is hidden from the caller): removes the chapter and its lessons in the same change; the later chapters move up one place.',
    'A stale If-Match is 412 and removes nothing; a second DELETE is 404.'
  ],
  updateLesson: [
    'The course\'s owner only, while still a creator (others 403; 404 where the course is hidden from the caller): replaces the title and body (absent body: none) and, with a position, moves the lesson within its chapter (the lessons between shift by one; past the end: last; absent: it stays).',
    'A stale If-Match is 412 and changes nothing.'
  ],
  patchLesson: [
    'The course\'s owner only, while still a creator: merges a JSON Merge Patch (RFC 7396): a member present replaces the field, a position moves the lesson within its chapter, null clears the body (on the title or position it is 422), an absent member is kept.',
    'A stale If-Match is 412 and changes nothing.'
  ],
  deleteLesson: [
    'The course\'s owner only (others 403; 404 where the course is hidden from the caller): removes the lesson; the later lessons of its chapter move up one place.',
    'A stale If-Match is 412 and removes nothing; a second DELETE is 404.'
  ],
  // src/routes/v1/creator-posts.ts
  listCreatorPosts: [
    'Anyone: a creator\'s published posts, newest activity first.',
    'Changes nothing.'
  ],
  // src/routes/v1/creators.ts
  getCreator: [
    'Anyone: the public profile of a creator; a profile that is not a creator is 404.',
    'Changes nothing.'
  ],
  // src/routes/v1/email-verifications.ts
  confirmEmail: [
    'Anyone holding the link: the token of the link Roja mailed (its `token` query parameter) verifies the account\'s address (204).',
    'Confirming an address that is already verified changes nothing (204 again).',
    'A token that is malformed, tampered with, expired, or for an address the account no longer has is 422 InvalidVerificationToken (`errors[0].rule` is `expired` or `invalid`).'
  ],
  sendVerificationEmail: [
    'The caller only (userId must be the caller, else 403): queues a new link that verifies the caller\'s address (202); earlier links keep working until they expire. 409 EmailAlreadyVerified when the address is verified.',
    'Counts against the per-user and per-recipient mail limits.'
  ],
  // src/routes/v1/media.ts
  getMedia: [
    'Anyone (posts and avatars point here).',
    '`Accept` picks the representation: the file\'s own type, or a wildcard covering it, gives the bytes (with `Range` support); `application/json` gives the metadata; anything else is 406.',
    'Changes nothing.'
  ],
  uploadMedia: [
    'Signed-in active users whose e-mail address is verified (else 403 EmailNotVerified, nothing read): uploads one file as multipart/form-data (field `file`); the media type is sniffed from the bytes.',
    'Streams to storage; over the per-upload limit 413 PayloadTooLarge, over what the caller\'s storage quota has left (uploads in progress count) 413 StorageQuotaExceeded, and nothing kept either way.',
    '`GET /v1/users/me/media` shows the quota and its use.',
    'Not idempotent: a retry makes a second media.'
  ],
  deleteMedia: [
    'The uploader only (others 403): deletes the file.',
    'Its bytes leave storage and its size leaves the quota at once; the caller\'s own avatar_url and posts\' media_url that name its URL are cleared in the same change.',
    'Anyone else\'s copy of the URL then answers 404.',
    'If-Match takes the ETag of the metadata (GET with Accept: application/json); a stale one is 412 and removes nothing.',
    'A second DELETE is 404.',
    'There is no PUT or PATCH: the bytes of a media never change; upload a new one.'
  ],
  // src/routes/v1/posts.ts
  listPosts: [
    'Anyone: published posts (published_at in the past), newest activity first, filtered by type, tags (all of them) and creator.',
    'Changes nothing.'
  ],
  getPost: [
    'Anyone for a published post; with a token, its creator for a draft or scheduled post too (everyone else gets 404).',
    'Changes nothing.'
  ],
  createPost: [
    'Active creators: creates a post owned by the caller.',
    'The slug is derived from the title when absent (409 when the caller already has it); published_at absent means now, a future time schedules it, null keeps a draft.'
  ],
  updatePost: [
    'The post\'s creator only, while still a creator (others 403): replaces the writable fields; an absent slug or published_at keeps the stored value.',
    'Moves the post up the default order.',
    'A stale If-Match is 412 and changes nothing.'
  ],
  patchPost: [
    'The post\'s creator only, while still a creator (others 403): merges a JSON Merge Patch (RFC 7396) into the writable fields.',
    'A member present replaces the field; null clears an optional one (body, tags, media_url; a null slug is derived from the title again, a null published_at makes a draft), and on type or title is 422; an absent member is kept.',
    'The merged post must pass the rules of PUT (422, a slug the caller already has 409) or nothing changes.',
    'Moves the post up the default order.',
    'A stale If-Match is 412 and changes nothing.'
  ],
  deletePost: [
    'The post\'s creator only (others 403): deletes the post with its reviews and comments.',
    'A stale If-Match is 412 and changes nothing.'
  ],
  // src/routes/v1/profiles.ts
  createProfile: [
    'Anyone: signs up, creating a user and its profile (the profile id is the user id), and queues one e-mail with a link that verifies the address (`email_verified` is false until then).',
    'The username is trimmed and lower-cased; a taken username or e-mail is 409.',
    'New accounts are not creators: an operator grants that.'
  ],
  getProfile: [
    'Anyone: a public profile, never with e-mail or password data.',
    'Changes nothing.'
  ],
  getMyProfile: [
    'Signed-in users: the caller\'s own profile, with the e-mail address and whether it is verified.',
    'Changes nothing.'
  ],
  updateMyProfile: [
    'Signed-in users: replaces the writable fields of the caller\'s own profile (an absent field becomes null); username, e-mail and password do not change here.',
    'A stale If-Match is 412.'
  ],
  patchMyProfile: [
    'Signed-in users: merges a JSON Merge Patch (RFC 7396) into the writable fields of the caller\'s own profile: a member present replaces the field, null clears an optional one (on first_name it is 422), an absent member is kept; username, e-mail and password do not change here.',
    'The merged profile must pass the rules of PUT (422, an avatar_url on an allowed media host) or nothing changes.',
    'A stale If-Match is 412.'
  ],
  // src/routes/v1/reviews.ts
  updateReview: [
    'The review\'s author only (others 403; 404 where the post is hidden from the caller): replaces its rating and text (an absent text becomes null).',
    'Still one review per user and post.',
    'A stale If-Match is 412 and changes nothing.'
  ],
  patchReview: [
    'The review\'s author only (others 403): merges a JSON Merge Patch (RFC 7396): a member present replaces the field, null clears the text (on the rating it is 422), an absent member is kept.',
    'A stale If-Match is 412 and changes nothing.'
  ],
  deleteReview: [
    'The review\'s author only (others 403): withdraws the review, and the alert it raised for the post\'s creator with it.',
    'The author may review the post again afterwards.',
    'A stale If-Match is 412 and removes nothing; a second DELETE is 404.'
  ],
  listReviews: [
    'Anyone for a published post; with a token, the creator of a draft too.',
    'The reviews of a post, newest first.',
    'Changes nothing.'
  ],
  getReview: [
    'Anyone for a published post; with a token, the creator of a draft too.',
    'One review.',
    'Changes nothing.'
  ],
  createReview: [
    'Any signed-in active user, once per post (409 on a second): adds a review and alerts the post\'s creator (an alert and an e-mail) unless the reviewer is the creator.'
  ],
  // src/routes/v1/shops.ts
  listShops: [
    'Anyone: every shop, filtered by owner.',
    'Changes nothing.'
  ],
  getShop: [
    'Anyone: one shop.',
    'Changes nothing.'
  ],
  listProducts: [
    'Anyone: the products of a shop, filtered by currency and price.',
    'Changes nothing.'
  ],
  getProduct: [
    'Anyone: one product of a shop.',
    'Changes nothing.'
  ],
  createShop: [
    'Active creators: opens a shop owned by the caller.'
  ],
  updateShop: [
    'The shop\'s owner only, while still a creator (others 403): replaces its name and description.',
    'A stale If-Match is 412 and changes nothing.'
  ],
  patchShop: [
    'The shop\'s owner only, while still a creator (others 403): merges a JSON Merge Patch (RFC 7396) into its name and description: a member present replaces the field, null clears the description (on the name it is 422), an absent member is kept.',
    'The merged shop must pass the rules of PUT (422) or nothing changes.',
    'A stale If-Match is 412 and changes nothing.'
  ],
  deleteShop: [
    'The shop\'s owner only (others 403): closes the shop and deletes its products.',
    'A stale If-Match is 412 and changes nothing.'
  ],
  createProduct: [
    'The shop\'s owner only, while still a creator: adds a product to the shop.'
  ],
  updateProduct: [
    'The shop\'s owner only, while still a creator: replaces the product\'s writable fields.',
    'A stale If-Match is 412 and changes nothing.'
  ],
  patchProduct: [
    'The shop\'s owner only, while still a creator: merges a JSON Merge Patch (RFC 7396) into the product\'s writable fields: a member present replaces the field, null clears the description (on name, price_cents or currency it is 422), an absent member is kept.',
    'The merged product must pass the rules of PUT (422) or nothing changes.',
    'A stale If-Match is 412 and changes nothing.'
  ],
  deleteProduct: [
    'The shop\'s owner only: removes the product.',
    'A stale If-Match is 412 and changes nothing.'
  ],
  // src/routes/v1/user-email.ts
  sendAccountSummary: [
    'The caller only (userId must be the caller, else 403): queues an e-mail with the account summary (account type and counts of posts, reviews, comments and alerts).',
    'Answers 202 at once; the outbox worker delivers the e-mail afterwards.',
    'While the caller\'s address is unverified: 403 EmailNotVerified, nothing queued.'
  ],
  // src/routes/v1/users.ts
  listMyPosts: [
    'Signed-in users: all of the caller\'s own posts, drafts and scheduled ones included, with the same filters and sorts as /v1/posts.',
    'Changes nothing.'
  ],
  listMyMedia: [
    'Signed-in users: the caller\'s own uploads (newest first by default, sortable by `created_at` or `size`), with `used_bytes` (all of them, every page), `quota_bytes` (MEDIA_QUOTA_BYTES) and `available_bytes` (what the next upload may take now; uploads in progress count).',
    'Changes nothing.'
  ],
  getUserPost: [
    'The caller only (userId must be the caller, else 403), an active creator, and the post\'s owner.',
    'Answers the post, drafts included, and queues an e-mail about it to the caller (a 304 too), unless the caller\'s address is unverified.'
  ],
  // src/routes/v2/posts.ts
  listPostsByCursor: [
    'Pass `next_cursor` back as `cursor` for the next page; a deep page costs what the first does, and posts written during the walk do not shift it.',
    'A cursor that was altered is 422.'
  ]
}
